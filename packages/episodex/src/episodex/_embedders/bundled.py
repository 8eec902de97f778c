"""The bundled dense embedder: all-MiniLM-L6-v2 from `episodex-models`, run by ONNX Runtime.

Synchronous and thread-safe; the memory classes call it from a worker thread so an event loop
never waits on a matrix multiply.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from episodex._embedders.base import Matrix
from episodex._embedders.onnx import OnnxModel

__all__ = ["DEFAULT_MODEL_ID", "BundledMiniLMEmbedder", "default_embedder"]

#: Model id recorded in stores made with the bundled embedder. Stores of the earlier int8 file
#: (`...:onnx-int8`) hold other vectors and must be re-indexed.
DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2:onnx-int8-pc@episodex-models-0.1"
_DIM = 384
_MODEL = "all-MiniLM-L6-v2"
# The files DEFAULT_MODEL_ID stands for: other files are refused at load, whatever the
# installed package's manifest says.
_FILES = {
    "model.onnx": "0074fff751cb27bdd660a9ea83a54ecd02c8668d4954b5f81908128cf9745016",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
# all-MiniLM-L6-v2 was trained on 256 word pieces; anything longer is cut by the tokenizer.
_MAX_TOKENS = 256


class BundledMiniLMEmbedder:
    """all-MiniLM-L6-v2 (ONNX, int8 per channel, 384 dimensions), shipped in `episodex-models`.

    Mean pooling and normalisation are part of the ONNX graph. The model's files are checked
    against their sha256 before loading and nothing is ever downloaded. The model loads on
    first use, not at construction.

    By default each text runs alone: the int8 graph scales its activations per run, so a text
    batched with others gets a slightly different vector (cosine about 0.99), and a store
    should give a text the same vector whichever batch it came in. Without padding, memory is
    bounded by the longest text. A larger `batch_size` embeds about 1.2x faster in
    length-sorted batches of at most `max_batch_tokens` padded tokens, at that cost.

    Args:
        batch_size: Most texts per ONNX run when embedding documents.
        max_batch_tokens: Most padded tokens per ONNX run.
        threads: ONNX Runtime threads; None lets it use every core.
    """

    def __init__(
        self, *, batch_size: int = 1, max_batch_tokens: int = 8192, threads: int | None = None
    ) -> None:
        self._model = OnnxModel(
            _MODEL,
            model_id=DEFAULT_MODEL_ID,
            files=_FILES,
            output="sentence_embedding",
            max_tokens=_MAX_TOKENS,
            max_batch=batch_size,
            max_batch_tokens=max_batch_tokens,
            threads=threads,
        )

    @property
    def model_id(self) -> str:
        """The id stores record for this model."""
        return DEFAULT_MODEL_ID

    @property
    def dimension(self) -> int:
        """384."""
        return _DIM

    @staticmethod
    def model_folder() -> Path:
        """The folder of the model's files, after checking them against their sha256."""
        return OnnxModel.folder(_MODEL)

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts for storage."""
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        return self._model.run(texts)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query."""
        return self._model.run([text])[0]


_default: BundledMiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> BundledMiniLMEmbedder:
    """Return the process-wide bundled embedder, so its model loads once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = BundledMiniLMEmbedder()
        return _default
