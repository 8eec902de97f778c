"""Precomputed vectors served as an embedder: the hook for repeated workloads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from episodex._embedders.base import Embedder, Matrix

__all__ = ["VectorCacheEmbedder"]

if TYPE_CHECKING:
    pass


class VectorCacheEmbedder:
    """Serve vectors from a precomputed table, falling back to a real embedder for the rest.

    The hook for workloads that embed the same texts again and again, such as the benchmarks'
    100k-episode stores: embed a pool of texts once, save the table, and reuse it. The model
    id is the inner embedder's, because the vectors are that model's.

    Args:
        inner: The embedder that made the table and embeds unseen texts.
        table: Text to vector.
    """

    def __init__(self, inner: Embedder, table: Mapping[str, Matrix]) -> None:
        self._inner = inner
        self._table = dict(table)
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        """The inner embedder's id."""
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts, looking each up in the table first."""
        missing = [t for t in texts if t not in self._table]
        if missing:
            fresh = self._inner.embed_documents(missing)
            self._table.update(zip(missing, fresh, strict=True))
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._table[t] for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query (queries are never cached: they are what is being measured)."""
        return self._inner.embed_query(text)
