"""Test helpers for code built on episodex: a deterministic embedder that needs no model.

The bundled model is offline and fast, but a unit test often wants vectors it can reason about
exactly: the same text always gives the same vector, texts that share words are close, texts
that share none are far apart. `HashEmbedder` gives that in microseconds, in any dimension.

Example:
    ```python
    from episodex import SyncEpisodicMemory
    from episodex.testing import HashEmbedder

    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    mem.memorize(
        short_summary="Refund for order 42",
        long_summary="The user asked for a refund for order 42.",
        user_id="alice",
        agent_id="support",
        conversation_id="c1",
    )
    found = mem.recall(user_id="alice", agent_id="support", query="refund for my order")
    print(found["previous_conversations"][0]["short_summary_text"])  # -> Refund for order 42
    mem.close()
    ```
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from episodex._embedders.base import Matrix

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """A deterministic bag-of-words embedder: exact, cheap vectors for tests.

    Every lower-cased word is hashed (BLAKE2b, so the same on every machine and run) to one of
    the dimensions after the first; the first dimension is always set so that no vector is ever
    zero (the cosine of a zero vector is undefined). Vectors are unit length. It satisfies the
    `Embedder` protocol and is safe to call from several threads.

    `dimension` and `model_id` are deliberately not validated here, so a test can hand a memory
    a malformed embedder and check that the memory refuses it.

    Args:
        dimension: The length of each vector.
        model_id: The id recorded in every store it writes; give two instances different ids
            to test what happens when a store is opened with another model.
    """

    # Never collected by pytest, whatever name a test module imports it under.
    __test__ = False

    def __init__(self, *, dimension: int = 64, model_id: str = "test/hash-bag-of-words") -> None:
        self._dimension = dimension
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        """The id recorded in every store this embedder writes."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The length of each vector."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts; returns an array of shape `(len(texts), dimension)`."""
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack([self._one(text) for text in texts])

    def embed_query(self, text: str) -> Matrix:
        """Embed one text; returns an array of shape `(dimension,)`."""
        return self._one(text)

    def _one(self, text: str) -> Matrix:
        vec = np.zeros(self._dimension, dtype=np.float32)
        vec[0] = 0.5
        buckets = self._dimension - 1
        if buckets > 0:
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vec[1 + int.from_bytes(digest, "little") % buckets] += 1.0
        vec /= np.linalg.norm(vec)  # in place, so the array stays float32
        return vec
