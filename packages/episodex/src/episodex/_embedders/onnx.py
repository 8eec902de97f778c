"""One ONNX model of `episodex-models` with its tokenizer, run in length-sorted batches.

Memory is what this module is about. A batch is padded to its longest text, and the SPLADE graph
holds a vocabulary-sized row (30,522 floats) per token, so one long text in a batch of short
ones multiplies the work and the memory. Texts are therefore tokenized first, sorted by length,
and cut into batches that hold at most `max_batch_tokens` padded tokens; the results go back in
the caller's order. ONNX Runtime's CPU arena is turned off so that a large batch's buffers are
returned after the run instead of being kept for the life of the process.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from episodex._common.errors import ConfigurationError, EmbeddingError
from episodex._embedders.base import clip_texts

__all__ = ["OnnxModel", "plan_batches"]


def plan_batches(lengths: Sequence[int], *, max_batch: int, max_tokens: int) -> list[list[int]]:
    """Group positions into batches of similar length, each within both caps.

    Positions are sorted by length (longest first, so the heaviest batch runs first and an
    out-of-memory shows at once); a batch takes texts while `count * longest <= max_tokens`
    and `count <= max_batch`, and always at least one text.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        longest = lengths[current[0]] if current else lengths[i]
        if current and (len(current) >= max_batch or (len(current) + 1) * longest > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class OnnxModel:
    """A model folder of `episodex-models`, loaded on first use and shared by threads.

    Args:
        name: The model's folder name in `episodex-models`.
        model_id: The id stores record for the model's vectors.
        files: The sha256 of `model.onnx` and `tokenizer.json` that `model_id` stands for.
        output: The graph output to read.
        max_tokens: Tokens kept per text (the tokenizer truncates the rest).
        max_batch: Most texts per run.
        max_batch_tokens: Most padded tokens per run (texts x longest text).
        threads: ONNX Runtime intra-op threads; None uses every core.
    """

    def __init__(
        self,
        name: str,
        *,
        model_id: str,
        files: Mapping[str, str],
        output: str,
        max_tokens: int,
        max_batch: int,
        max_batch_tokens: int,
        threads: int | None = None,
    ) -> None:
        self.name = name
        self.model_id = model_id
        self.files = dict(files)
        self.output = output
        self.max_tokens = max_tokens
        self.max_batch = max_batch
        self.max_batch_tokens = max_batch_tokens
        self.threads = threads
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None

    @staticmethod
    def folder(name: str) -> Path:
        """The model's folder, its files checked against the package manifest."""
        try:
            import episodex_models
        except ImportError as exc:  # pragma: no cover - a dependency of episodex
            raise ConfigurationError(
                'the bundled models need the package episodex-models: pip install "episodex"'
            ) from exc
        try:
            return episodex_models.model_path(name)
        except episodex_models.ModelFileError as exc:
            raise EmbeddingError(str(exc)) from exc

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    try:
                        self._loaded = self._open()
                    except (EmbeddingError, ConfigurationError):
                        raise
                    except Exception as exc:
                        raise EmbeddingError(
                            f"could not load the model {self.name}: {exc}"
                        ) from exc
        return self._loaded

    def _open(self) -> tuple[Any, Any]:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = self.folder(self.name)
        # Built from the very bytes checked here: the package's check runs once per process,
        # and a file changed since (or of a rebuilt package with a manifest to match) would
        # put other vectors into stores under this model id.
        tokenizer = Tokenizer.from_buffer(self._read(folder, "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        options = ort.SessionOptions()
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 3
        # Idle intra-op threads would otherwise busy-wait for the next op: with several
        # callers embedding at once (concurrent recalls, a bulk ingest beside them) the spinning
        # threads take the cores the other runs and the event loop need. Measured on 2 cores:
        # 16 concurrent recalls went from 0.95x to 1.2-1.5x one caller's rate, one caller's own
        # latency unchanged (benchmarks/README.md, "Load").
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.threads is not None:
            options.intra_op_num_threads = self.threads
        session = ort.InferenceSession(
            self._read(folder, "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        return tokenizer, session

    def _read(self, folder: Path, file: str) -> bytes:
        """The bytes of `file` if they are the ones `model_id` stands for, else `EmbeddingError`."""
        path = folder / file
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise EmbeddingError(
                f"{path} cannot be read ({exc}): reinstall episodex-models"
            ) from exc
        found = hashlib.sha256(data).hexdigest()
        if found != self.files[file]:
            raise EmbeddingError(
                f"{path} does not have the sha256 {self.files[file]} of the model "
                f"{self.model_id} (found {found}): it changed after it was checked or is of "
                "another build, and its vectors would be stored under that model id; "
                "reinstall episodex-models (the version this episodex requires)"
            )
        return data

    def run(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One output row per text, in the order given (shape `(0, 0)` for no texts)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        tokenizer, session = self._load()
        try:
            encodings = tokenizer.encode_batch(clip_texts(texts))
            lengths = [len(e.ids) for e in encodings]
            out = np.empty((0, 0), dtype=np.float32)
            for batch in plan_batches(
                lengths, max_batch=self.max_batch, max_tokens=self.max_batch_tokens
            ):
                width = lengths[batch[0]]
                ids = np.zeros((len(batch), width), dtype=np.int64)
                mask = np.zeros((len(batch), width), dtype=np.int64)
                types = np.zeros((len(batch), width), dtype=np.int64)
                for row, i in enumerate(batch):
                    enc = encodings[i]
                    n = lengths[i]
                    ids[row, :n] = enc.ids
                    mask[row, :n] = 1
                    types[row, :n] = enc.type_ids
                feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
                rows = session.run([self.output], feed)[0]
                if not out.size:
                    out = np.empty((len(texts), rows.shape[1]), dtype=np.float32)
                out[batch] = rows
        except Exception as exc:
            raise EmbeddingError(f"{self.name} failed: {exc}") from exc
        return out
