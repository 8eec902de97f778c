"""`VectorCacheEmbedder` checks its inner embedder's answer before keeping any of it.

It stored whatever the inner embedder returned for unseen texts: a NaN row, or a row of
another length, stayed in the table for good, so every later write of that text failed even
once the inner embedder answered well again; too few or too many rows raised a raw
`ValueError` from `zip`. The answer is now checked as every embedder's is (one finite row of
the dimension per text): a bad one raises `EmbeddingError` and nothing of it is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from episodex import EmbeddingError, EpisodicMemory, VectorCacheEmbedder
from episodex.testing import HashEmbedder

Spoil = Callable[[np.ndarray], np.ndarray]


class OnceWrong(HashEmbedder):
    """The test embedder, whose next `embed_documents` answer is spoiled by `spoil`."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.spoil: Spoil | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        rows = super().embed_documents(texts)
        spoil, self.spoil = self.spoil, None
        return rows if spoil is None else spoil(rows)


def _nan(rows: np.ndarray) -> np.ndarray:
    out = rows.copy()
    out[0, 3] = np.nan
    return out


def _short(rows: np.ndarray) -> np.ndarray:
    return rows[:, :-1]


def _one_missing(rows: np.ndarray) -> np.ndarray:
    return rows[:-1]


def _one_more(rows: np.ndarray) -> np.ndarray:
    return np.concatenate([rows, rows[:1]])


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (_nan, "not finite"),
        (_short, "shape"),
        (_one_missing, "shape"),
        (_one_more, "shape"),
    ],
)
def test_a_bad_answer_is_an_embedding_error_and_nothing_is_cached(spoil: Spoil, why: str) -> None:
    inner = OnceWrong()
    cache = VectorCacheEmbedder(inner, {"known": HashEmbedder().embed_documents(["known"])[0]})
    inner.spoil = spoil
    with pytest.raises(EmbeddingError, match=why):
        cache.embed_documents(["known", "new one", "new two"])
    assert (cache.hits, cache.misses) == (0, 0)
    # The inner embedder answers well again: its answer is used, not the spoiled one.
    vectors = cache.embed_documents(["new one", "new two", "known"])
    expected = HashEmbedder().embed_documents(["new one", "new two", "known"])
    np.testing.assert_array_equal(vectors, expected)
    assert vectors.dtype == np.float32
    assert (cache.hits, cache.misses) == (1, 2)


def test_a_cached_vector_is_a_copy_of_the_inner_answer() -> None:
    inner = HashEmbedder()
    answers: list[np.ndarray] = []

    class Keeps(HashEmbedder):
        __test__ = False

        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            rows = inner.embed_documents(texts)
            answers.append(rows)
            return rows

    cache = VectorCacheEmbedder(Keeps(), {})
    first = cache.embed_documents(["refund"]).copy()
    answers[0][:] = 0.0  # the inner embedder reuses its buffer
    np.testing.assert_array_equal(cache.embed_documents(["refund"]), first)


async def test_a_memory_writes_after_a_bad_answer_is_gone() -> None:
    inner = OnceWrong()
    cache = VectorCacheEmbedder(inner, {})
    mem = EpisodicMemory(location=":memory:", embedder=cache, splade=False)
    try:
        episode = {
            "user_id": "u1",
            "agent_id": "support",
            "conversation_id": "c1",
            "short_summary": "Refund for order 1234",
            "long_summary": "The user asked for a refund; the agent issued it.",
        }
        inner.spoil = _nan
        with pytest.raises(EmbeddingError):
            await mem.memorize_many([episode])
        assert await mem.count(user_id="u1", agent_id="support") == 0
        (point_id,) = await mem.memorize_many([episode])
        assert await mem.count(user_id="u1", agent_id="support") == 1
        hits = await mem.recall(user_id="u1", agent_id="support", query="refund")
        assert [h["point_id"] for h in hits["previous_conversations"]] == [point_id]
    finally:
        mem.close()
