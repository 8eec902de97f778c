"""Deletes a Qdrant server applied and then failed to answer for.

A server can apply a delete and then fail the call (a timed-out answer, a dropped connection):
`QdrantTaskStore.delete`, `EpisodicMemory.forget`, `ItemStore.forget` and the lesson deletes
raised while the data was gone, so a caller told "failed" found it deleted. A delete is
idempotent: a failed one on a server is checked now (the points it was to delete counted
again), and the call returns what it did when nothing of them is left; otherwise it raises.

The failing engine is qdrant-client's `:memory:`, wrapped to apply the next delete and then
raise, reporting the kind `server`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from episodex import (
    Engine,
    EngineUnavailableError,
    Episode,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    QdrantTaskStore,
    Task,
    open_engine,
)
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder


class FailingServer:
    """`:memory:` whose next delete, once `fail` is set, raises after or before it is applied."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.kind = "server"
        self.fail: str | None = None  # "applied", "not-applied"

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.inner.upsert(collection, points)

    def delete(self, collection: str, flt: Filter) -> None:
        fail, self.fail = self.fail, None
        if fail != "not-applied":
            self.inner.delete(collection, flt)
        if fail is not None:
            raise EngineUnavailableError("delete failed: the Qdrant server is unreachable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _task_episode(episode_id: str) -> Episode:
    return Episode(
        id_=episode_id,
        task=Task(instruction=f"task {episode_id}"),
        rollout="done",
        completed_at=datetime(2025, 1, 1, tzinfo=UTC),
    )


def test_a_task_episode_delete_applied_then_failed_returns() -> None:
    engine = FailingServer(open_engine(location=":memory:"))
    store = QdrantTaskStore(engine=cast(Engine, engine), embedder=HashEmbedder())
    try:
        asyncio.run(store.write(_task_episode("gone")))
        asyncio.run(store.write(_task_episode("kept")))
        engine.fail = "applied"
        asyncio.run(store.delete("gone"))
        assert [e.id_ for e in asyncio.run(store.read_recent(5))] == ["kept"]
        engine.fail = "not-applied"
        with pytest.raises(EngineUnavailableError):
            asyncio.run(store.delete("kept"))
        assert [e.id_ for e in asyncio.run(store.read_recent(5))] == ["kept"]
    finally:
        store.close()
        engine.inner.close()


def test_a_forget_applied_then_failed_returns_what_it_deleted() -> None:
    engine = FailingServer(open_engine(location=":memory:"))
    mem = EpisodicMemory(engine=cast(Engine, engine), embedder=HashEmbedder(), splade=False)
    items = ItemStore(cast(Engine, engine), HashEmbedder())
    try:
        mem.store.memorize_many(
            [
                {
                    "short_summary": f"short {i}",
                    "long_summary": f"long {i}",
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": f"c{i % 2}",
                }
                for i in range(4)
            ]
        )
        engine.fail = "applied"
        assert mem.store.forget(user_id="u", agent_id="a", conversation_id="c0") == 2
        engine.fail = "not-applied"
        with pytest.raises(EngineUnavailableError):
            mem.store.forget(user_id="u", agent_id="a", everything=True)
        assert mem.store.count(user_id="u", agent_id="a") == 2

        items.write([ItemPut(ItemRef("u", "a", ("n",), f"k{i}"), {"i": i}) for i in range(3)])
        engine.fail = "applied"
        assert items.forget(user_id="u", agent_id="a") == 3
        assert items.count(user_id="u", agent_id="a") == 0
    finally:
        mem.close()
        engine.inner.close()
