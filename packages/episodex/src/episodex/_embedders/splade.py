"""SPLADE-tiny learned sparse vectors, from `episodex-models`, run by ONNX Runtime.

SPLADE weights vocabulary terms by a masked language model: a text gets weights for its own
word pieces and for related ones it does not contain, which is where it beats BM25 on
paraphrased questions. The weights are final (no IDF modifier in the collection) and compared by
dot product.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from episodex._common.vectors import SparseVec
from episodex._embedders.onnx import OnnxModel

__all__ = ["SPLADE_MODEL_ID", "SpladeEncoder", "default_splade"]

#: Model id recorded in stores that keep a SPLADE stream.
SPLADE_MODEL_ID = "splade-tiny:onnx@episodex-models-0.1"
_MODEL = "splade-tiny"
# The files SPLADE_MODEL_ID stands for: other files are refused at load, whatever the installed
# package's manifest says.
_FILES = {
    "model.onnx": "482bf336636e488e6b8c82859ecbaef702d0d6ca24e3e7ab14cc46adddcc7131",
    "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
}


class SpladeEncoder:
    """SPLADE-tiny (2-layer BERT, 30,522 vocabulary terms), shipped in `episodex-models`.

    The model loads on first use. Documents are encoded in length-sorted batches of at most
    `max_batch_tokens` padded tokens: the graph holds a vocabulary-sized row per token, so this
    cap is what bounds memory (1,024 tokens are about 125 MB of logits).

    Args:
        max_tokens: Word pieces kept per text.
        batch_size: Most texts per ONNX run.
        max_batch_tokens: Most padded tokens per ONNX run.
        threads: ONNX Runtime threads; None lets it use every core.
    """

    def __init__(
        self,
        *,
        max_tokens: int = 256,
        batch_size: int = 64,
        max_batch_tokens: int = 1024,
        threads: int | None = None,
    ) -> None:
        self._model = OnnxModel(
            _MODEL,
            model_id=SPLADE_MODEL_ID,
            files=_FILES,
            output="sparse_weights",
            max_tokens=max_tokens,
            max_batch=batch_size,
            max_batch_tokens=max_batch_tokens,
            threads=threads,
        )
        self.config = {"model": SPLADE_MODEL_ID, "max_tokens": max_tokens}

    @property
    def model_id(self) -> str:
        """The id stores record for this model."""
        return SPLADE_MODEL_ID

    def documents(self, texts: Sequence[str]) -> list[SparseVec]:
        """The sparse vector of each text."""
        if not texts:
            return []
        return [_sparse(row) for row in self._model.run(texts)]

    def document(self, text: str) -> SparseVec:
        """The sparse vector of one stored text."""
        return self.documents([text])[0]

    def query(self, text: str) -> SparseVec:
        """The sparse vector of a query (the same encoder as documents)."""
        return self.documents([text])[0]


def _sparse(row: np.ndarray) -> SparseVec:  # type: ignore[type-arg]
    nz = np.flatnonzero(row > 0)
    return SparseVec(nz.tolist(), row[nz].astype(float).tolist())


_default: SpladeEncoder | None = None
_default_lock = threading.Lock()


def default_splade() -> SpladeEncoder:
    """Return the process-wide SPLADE encoder, so its model loads once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SpladeEncoder()
        return _default
