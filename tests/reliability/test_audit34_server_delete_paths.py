"""The other deletes of the core, which a Qdrant server can apply and then fail to answer for.

`delete_checked` (a failed delete on a server counted again, done when nothing is left) was
used by the task-episode delete and the forgets alone. The deletes that take back a failed
write (`memorize_many`, `upsert_or_take_back`) and those in a re-index's staging collections
(`delete_staged`) still raised when the server had applied them: a failed write whose taking
back had worked was reported "may be stored, write it again", and a forget raised after
emptying the staged copy, before forgetting anything else. Each now goes through the check.

The failing engine is qdrant-client's `:memory:` reporting the kind `server`, whose next delete
or upsert, once told, is applied and then raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from episodex import (
    Engine,
    EngineUnavailableError,
    Episode,
    EpisodeStore,
    EpisodicMemory,
    QdrantTaskStore,
    Task,
)
from episodex._engines.qdrant import QdrantClientEngine
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"


class AnsweringLate(QdrantClientEngine):
    """`:memory:` as a server whose next delete or upsert, once told, applies and then fails."""

    def __init__(self) -> None:
        super().__init__(url=None, location=":memory:")
        self.fail: set[str] = set()

    @property
    def kind(self) -> str:
        return "server"

    def _applied_then_failed(self, what: str) -> None:
        if what in self.fail:
            self.fail.discard(what)
            raise EngineUnavailableError(f"{what} failed: the Qdrant server is unreachable")

    def delete(self, collection: str, flt: Filter) -> None:
        super().delete(collection, flt)
        self._applied_then_failed("delete")

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        super().upsert(collection, points)
        self._applied_then_failed("upsert")


@pytest.fixture
def engine() -> Iterator[AnsweringLate]:
    e = AnsweringLate()
    yield e
    e.close()


def _episodes(conversation: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{conversation} short {i}",
            "long_summary": f"{conversation} long {i}",
            "user_id": USER,
            "agent_id": AGENT,
            "conversation_id": conversation,
        }
        for i in range(n)
    ]


def _every_point(engine: AnsweringLate, store: EpisodeStore) -> int:
    """Every point of the collection, whoever's."""
    return engine.count(store.collection, Filter())


def test_a_failed_write_whose_take_back_delete_was_applied_raises_its_own_error(
    engine: AnsweringLate,
) -> None:
    mem = EpisodicMemory(engine=cast(Engine, engine), embedder=HashEmbedder(), splade=False)
    try:
        mem.store.memorize_many(_episodes("kept", 1))
        engine.fail = {"upsert", "delete"}
        with pytest.raises(EngineUnavailableError, match="upsert failed"):
            mem.store.memorize_many(_episodes("new", 5), batch_size=2)
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 1
        assert _every_point(engine, mem.store) == 1
    finally:
        mem.close()


def test_a_failed_task_write_whose_take_back_delete_was_applied_raises_its_own_error(
    engine: AnsweringLate,
) -> None:
    store = QdrantTaskStore(engine=cast(Engine, engine), embedder=HashEmbedder())
    try:
        engine.fail = {"upsert", "delete"}
        with pytest.raises(EngineUnavailableError, match="upsert failed"):
            asyncio.run(
                store.write(
                    Episode(
                        id_="new",
                        task=Task(instruction="a task"),
                        rollout="done",
                        completed_at=datetime(2025, 1, 1, tzinfo=UTC),
                    )
                )
            )
        assert asyncio.run(store.read_recent(5)) == []
    finally:
        store.close()


class _Stop(Exception):
    pass


def _interrupt(done: int, total: int) -> None:
    if done == total:  # everything copied, not switched
        raise _Stop


def test_a_forget_whose_staged_copy_delete_was_applied_returns(engine: AnsweringLate) -> None:
    mem = EpisodicMemory(
        engine=cast(Engine, engine), embedder=HashEmbedder(model_id="test/old"), splade=False
    )
    try:
        mem.store.memorize_many(_episodes("secret", 3) + _episodes("kept", 2))
        with pytest.raises(_Stop):
            asyncio.run(
                mem.reindex(HashEmbedder(model_id="test/new"), batch_size=2, on_progress=_interrupt)
            )
        engine.fail = {"delete"}  # the delete in the staging collection the re-index left
        assert mem.store.forget(user_id=USER, agent_id=AGENT, conversation_id="secret") == 3
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 2
    finally:
        mem.close()
