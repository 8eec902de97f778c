"""Vectors that are not vectors: an embedder's NaN, infinity or wrong shape is refused alike.

An embedder is a user's object (or a remote API, `OpenAICompatibleEmbedder`, whose JSON may
hold `NaN` or a number too large for float32). Before these checks, a non-finite vector was
stored silently by the embedded engine (the episode could then never be found by a dense
search) while qdrant-client `:memory:` refused NaN but stored infinity, and every later
recall of that tenant ranked the broken point first with a NaN score. An embedder answering
fewer rows than texts raised `IndexError` or `StopIteration` from deep inside a write.

Now every vector an embedder returns is checked where the memories take it (one row per text,
the embedder's dimension, finite in float32): a bad one is an `EmbeddingError` and nothing is
written. The engines check the vectors of every point and query too, so code that calls an
`Engine` directly gets the same `ValidationError` on every backend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt
import pytest
from episodex import (
    EmbeddingError,
    Episode,
    QdrantTaskStore,
    StepLessonMemory,
    Task,
    TaskResult,
    ValidationError,
    open_engine,
)
from episodex.plan import CollectionSpec, Filter, Point, Search, Stream
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory, total_points

USER, AGENT = "u", "a"
#: Values an embedder (or a JSON answer cast to float32) can produce that are not numbers.
POISONS = [math.nan, math.inf, -math.inf, 1e39]


class PoisonEmbedder(HashEmbedder):
    """The hash embedder, except that a text holding `poison` gets `value` in its vector."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def _poisoned(self, text: str, row: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        out = row.astype(np.float64)
        if "poison" in text:
            out[1] = self.value
        return out

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = super().embed_documents(texts)
        # float64, as a numpy-based embedder may return: 1e39 only overflows in float32.
        poisoned = [self._poisoned(t, r) for t, r in zip(texts, rows, strict=True)]
        # The Embedder protocol says float32; a real embedder may well return float64.
        return cast(npt.NDArray[np.float32], np.stack(poisoned) if poisoned else rows)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return cast(npt.NDArray[np.float32], self._poisoned(text, super().embed_query(text)))


class ShortEmbedder(HashEmbedder):
    """Answers one row fewer than it was given texts, and query vectors one too short."""

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return super().embed_documents(texts)[:-1]

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return super().embed_query(text)[:-1]


def _task_store(backend: str, tmp_path: Path, embedder: HashEmbedder) -> QdrantTaskStore:
    if backend == "edge":
        return QdrantTaskStore(tmp_path / "tasks", embedder=embedder)
    return QdrantTaskStore(embedder=embedder, location=":memory:")


def _episode(text: str) -> dict[str, str]:
    return {
        "short_summary": f"{text} short",
        "long_summary": f"{text} long",
        "user_id": USER,
        "agent_id": AGENT,
        "conversation_id": "c1",
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", POISONS)
async def test_a_non_finite_embedding_is_an_embedding_error_and_stores_nothing(
    backend: str, value: float, tmp_path: Path
) -> None:
    with open_memory(backend, tmp_path, embedder=PoisonEmbedder(value), splade=False) as mem:
        await mem.memorize_many([_episode("fine")])
        with pytest.raises(EmbeddingError, match="not finite"):
            await mem.memorize_many([_episode("also fine"), _episode("poison pill")])
        assert total_points(mem) == 1
        with pytest.raises(EmbeddingError, match="not finite"):
            await mem.recall(user_id=USER, agent_id=AGENT, query="poison query")
        res = await mem.recall(user_id=USER, agent_id=AGENT, query="fine")
        assert [h["short_summary_text"] for h in res["previous_conversations"]] == ["fine short"]


@pytest.mark.parametrize("backend", ["edge", "memory"])
@pytest.mark.parametrize("value", POISONS)
async def test_a_task_store_refuses_a_non_finite_embedding(
    backend: str, value: float, tmp_path: Path
) -> None:
    store = _task_store(backend, tmp_path, PoisonEmbedder(value))
    try:
        task = Task(instruction="poison the well")
        episode = Episode(task=task, result=TaskResult(task_id=task.id_, content="done"))
        with pytest.raises(EmbeddingError, match="not finite"):
            await store.write(episode)
        assert await store.count() == 0
        with pytest.raises(EmbeddingError, match="not finite"):
            await store.search("poison", k=3, mode="dense")
    finally:
        store.close()


async def test_a_step_lesson_with_a_non_finite_embedding_is_refused(tmp_path: Path) -> None:
    engine = open_engine(path=str(tmp_path / "lessons"))
    lessons = StepLessonMemory(engine, PoisonEmbedder(math.nan))
    try:
        step = {
            "step_id": "s1",
            "user_id": USER,
            "agent_id": AGENT,
            "session_id": "s",
            "run_id": "r1",
            "rep": 1,
            "step_num": 1,
            "env_pre": {"url": "/x"},
            "internal_state": "poison state",
            "action": "click('1')",
        }
        with pytest.raises(EmbeddingError, match="not finite"):
            await lessons.store_memories([step])
        assert await lessons.count("s", user_id=USER, agent_id=AGENT) == 0
    finally:
        engine.close()


@pytest.mark.parametrize("backend", ["edge", "memory"])
async def test_an_embedder_answering_the_wrong_shape_is_an_embedding_error(
    backend: str, tmp_path: Path
) -> None:
    with open_memory(backend, tmp_path, embedder=ShortEmbedder(), splade=False) as mem:
        with pytest.raises(EmbeddingError, match="shape"):
            await mem.memorize_many([_episode("one"), _episode("two")])
        assert total_points(mem) == 0
    store = _task_store(backend, tmp_path, ShortEmbedder())
    try:
        task = Task(instruction="count the rows")
        with pytest.raises(EmbeddingError, match="shape"):
            await store.write(Episode(task=task))
        assert await store.count() == 0
    finally:
        store.close()


SPEC = CollectionSpec(name="vectors", dense={"a": 4}, tenant_key="user")
GOOD = Point(
    id="00000000-0000-4000-8000-000000000001",
    dense={"a": [1.0, 0.0, 0.0, 0.0]},
    sparse={},
    payload={"user": "u"},
)


@pytest.mark.parametrize("backend", ["edge", "memory"])
@pytest.mark.parametrize("value", POISONS)
def test_engines_refuse_non_finite_vectors_alike(
    backend: str, value: float, tmp_path: Path
) -> None:
    path = str(tmp_path / "engine") if backend == "edge" else None
    engine = open_engine(path=path, location=None if path else ":memory:")
    try:
        engine.ensure_collection(SPEC)
        engine.upsert("vectors", [GOOD])
        bad = Point(
            id="00000000-0000-4000-8000-000000000002",
            dense={"a": [value, 1.0, 0.0, 0.0]},
            sparse={},
            payload={"user": "u"},
        )
        with pytest.raises(ValidationError, match="not finite"):
            engine.upsert("vectors", [bad])
        assert engine.count("vectors", Filter()) == 1
        query = Search(Stream("a", [value, 1.0, 0.0, 0.0], 10), Filter(), 10)
        with pytest.raises(ValidationError, match="not finite"):
            engine.query("vectors", [query])
        [hits] = engine.query(
            "vectors", [Search(Stream("a", [1.0, 0.0, 0.0, 0.0], 10), Filter(), 10)]
        )
        assert [h.id for h in hits] == [GOOD.id] and math.isfinite(hits[0].score)
    finally:
        engine.close()
