"""Precomputed vectors served as an embedder: the hook for repeated workloads."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np

from episodex._common.errors import ConfigurationError
from episodex._embedders.base import Embedder, Matrix, embed_documents

__all__ = ["VectorCacheEmbedder"]


class VectorCacheEmbedder:
    """Serve vectors from a precomputed table, falling back to a real embedder for the rest.

    The hook for workloads that embed the same texts again and again, such as the benchmarks'
    100k-episode stores: embed a pool of texts once, save the table, and reuse it. The model
    id is the inner embedder's, because the vectors are that model's.

    Args:
        inner: The embedder that made the table and embeds unseen texts.
        table: Text to vector. Each vector is checked here: one of another length, or with a
            NaN or infinity, is a `ConfigurationError` naming its text, not a failure of
            whichever write first meets that text.
    """

    def __init__(self, inner: Embedder, table: Mapping[str, Matrix]) -> None:
        self._inner = inner
        dim = inner.dimension
        self._table: dict[str, Matrix] = {}
        for text, vector in dict(table).items():
            try:
                row = np.asarray(vector, dtype=np.float32)
            except (TypeError, ValueError):
                row = None
            if row is None or row.shape != (dim,) or not bool(np.isfinite(row).all()):
                raise ConfigurationError(
                    f"the table's vector for {text[:60]!r} is not {dim} finite numbers "
                    f"({inner.model_id} vectors are {dim} long)"
                )
            self._table[text] = row
        #: Texts found in the table, and embedded by `inner`, so far (updated under a lock:
        #: an embedder is called from several threads, and `+=` is no atomic update).
        self.hits = 0
        self.misses = 0
        self._counting = threading.Lock()

    @property
    def model_id(self) -> str:
        """The inner embedder's id."""
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts, looking each up in the table first.

        Raises:
            EmbeddingError: The inner embedder's answer for the unseen texts is not one finite
                row of its dimension per text; none of it is kept.
        """
        missing = [t for t in texts if t not in self._table]
        if missing:
            # Checked as every embedder's answer is (one finite row of the dimension per
            # text, else `EmbeddingError`) before any of it is kept: a bad row cached would
            # fail every later write of its text, even once the inner embedder answers well.
            # Copied: an inner embedder may reuse the array it answered with.
            fresh = np.array(embed_documents(self._inner, missing), dtype=np.float32)
            self._table.update(zip(missing, fresh, strict=True))
        # Counted before the lock: len() of the caller's sequence may run its code, and no
        # code but the two additions may run between reading a counter and writing it.
        hits = len(texts) - len(missing)
        with self._counting:
            self.misses += len(missing)
            self.hits += hits
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._table[t] for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query (queries are never cached: they are what is being measured)."""
        return self._inner.embed_query(text)
