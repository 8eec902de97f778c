"""Task-episode and step-lesson writes a Qdrant server applied and then failed to answer for.

`QdrantTaskStore.write` / `update` and `StepLessonMemory.store_memories` write points with ids
of their own (a digest of the tenant and episode id; the step's id) in one upsert. A server can
apply it and then fail the call (a timed-out answer, a dropped connection): the episode or step
stayed stored, new or replacing the one there, while the call raised. On a server such a write
is now taken back: what it replaces is read first (in the owner check's one read) and written
back as it was, and ids that held nothing are deleted.

The failing engine is qdrant-client's `:memory:`, wrapped to apply chosen upserts and then
raise, reporting the kind `server`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from episodex import (
    Engine,
    EngineUnavailableError,
    Episode,
    QdrantTaskStore,
    StepLessonMemory,
    Task,
    open_engine,
)
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder


class AppliedThenFailed:
    """`:memory:` whose upserts, once `failing` is set, are applied and then raise."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.failing = False
        self.kind = "server"

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.inner.upsert(collection, points)
        if self.failing:
            self.failing = False  # the take-back's own writes go through
            raise EngineUnavailableError(
                "upsert failed: the Qdrant server is unreachable after 3 attempts (timed out)"
            )

    def delete(self, collection: str, flt: Filter) -> None:
        self.inner.delete(collection, flt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _task_episode(episode_id: str, instruction: str) -> Episode:
    return Episode(
        id_=episode_id,
        task=Task(instruction=instruction),
        rollout="done",
        completed_at=datetime(2025, 1, 1, tzinfo=UTC),
    )


def test_a_task_episode_write_applied_then_failed_is_taken_back() -> None:
    engine = AppliedThenFailed(open_engine(location=":memory:"))
    store = QdrantTaskStore(engine=cast(Engine, engine), embedder=HashEmbedder())
    try:
        asyncio.run(store.write(_task_episode("kept", "file the expense report")))
        engine.failing = True
        with pytest.raises(EngineUnavailableError):
            asyncio.run(store.write(_task_episode("new", "book a flight")))
        assert asyncio.run(store.count()) == 1
        engine.failing = True
        with pytest.raises(EngineUnavailableError):
            asyncio.run(store.update(_task_episode("kept", "cancel the expense report")))
        (back,) = asyncio.run(store.read_recent(5))
        assert back.task.instruction == "file the expense report"
        # Restored with its vectors: a search still finds it.
        found = asyncio.run(store.search("file the expense report", 1))
        assert [e.id_ for e in found] == ["kept"]
    finally:
        store.close()
        engine.inner.close()


def _step(point_id: str, action: str, step_id: str = "s1") -> dict[str, Any]:
    return {
        "id": point_id,
        "step_id": step_id,
        "user_id": "u",
        "agent_id": "web",
        "session_id": "ticket-7",
        "run_id": "r1",
        "rep": 1,
        "step_num": 1,
        "env_pre": {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]},
        "internal_state": "save ticket 7",
        "action": action,
        "outcome": "failure",
    }


def test_a_step_lesson_write_applied_then_failed_is_taken_back() -> None:
    engine = AppliedThenFailed(open_engine(location=":memory:"))
    lessons = StepLessonMemory(cast(Engine, engine), HashEmbedder())
    kept, new = str(uuid.uuid4()), str(uuid.uuid4())
    scope = {"user_id": "u", "agent_id": "web"}
    try:
        asyncio.run(lessons.store_memories([_step(kept, "click [1]")]))
        engine.failing = True
        with pytest.raises(EngineUnavailableError):
            asyncio.run(
                lessons.store_memories([_step(kept, "type 'x'"), _step(new, "click", "s2")])
            )
        stored = asyncio.run(lessons.load_all_memories_for_session("ticket-7", **scope))
        assert [(m.id, m.action) for m in stored] == [(kept, "click [1]")]
    finally:
        engine.inner.close()
