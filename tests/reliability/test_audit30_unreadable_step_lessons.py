"""One stored step that cannot be read back must not cost a session its lessons.

A step-lesson point written by another program or an older release may hold a field of the
wrong type (a rep that is text or missing, a page that is a string, a time that is no time).
`StepLessonMemory` parsed every stored step of the session at once: `init_episode` raised a
raw `ValueError`/`KeyError` on the rep, and `retrieve_memories`, `lessons_block` and resuming
an attempt raised `ValidationError`, so the agent ran with no lessons at all (or not at all).
Such a step is now left out of those reads and logged once with its point id; the lessons of
the other steps still come back. `load_all_memories_for_session`, which promises every stored
step (it feeds `export_memories`, and a move to another embedder), raises `EngineError`
naming the point instead of handing back a session without it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EngineError, EpisodicMemory, StepLessonMemory
from episodex.plan import Filter, HasId, Point
from episodex.testing import HashEmbedder

PAGE = {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'", "[2] link"]}
SCOPE = {"user_id": "u", "agent_id": "web"}

#: How the bad step's payload is changed (None: the field is removed).
BAD: dict[str, tuple[str, Any]] = {
    "rep-text": ("rep", "one"),
    "rep-missing": ("rep", None),
    "rep-float": ("rep", 1e300),
    "page-text": ("env_pre", "a page"),
    "time-text": ("created_at", "yesterday"),
    "action-missing": ("action", None),
}


@pytest.fixture(params=["edge", "memory"])
def lessons(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StepLessonMemory]:
    options: dict[str, Any] = (
        {"location": ":memory:"} if request.param == "memory" else {"path": tmp_path / "s"}
    )
    memory = EpisodicMemory(**options, embedder=HashEmbedder(), splade=False)
    yield StepLessonMemory.from_memory(memory, final_k=5)
    memory.close()


def _step(step_id: str, action: str, run_id: str = "r1") -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),  # a point id of its own: each is reported once a process
        "step_id": step_id,
        **SCOPE,
        "session_id": "ticket-7",
        "run_id": run_id,
        "rep": 1,
        "step_num": int(step_id[-1]),
        "env_pre": PAGE,
        "internal_state": "save ticket 7",
        "action": action,
        "outcome": "failure",
    }


def _spoil(lessons: StepLessonMemory, point_id: str, field: str, value: Any) -> None:
    """Rewrite one stored step as another program might."""
    store = lessons._store  # pyright: ignore[reportPrivateUsage]
    (hit,), _ = store.engine.scroll(store.collection, Filter(must=(HasId((point_id,)),)), limit=1)
    payload = dict(hit.payload)
    if value is None:
        del payload[field]
    else:
        payload[field] = value
    dense = {"state": payload["internal_state_embedding"]}
    store.engine.upsert(
        store.collection, [Point(id=hit.id, dense=dense, sparse={}, payload=payload)]
    )


@pytest.mark.parametrize(("field", "value"), BAD.values(), ids=list(BAD))
async def test_lesson_reads_leave_an_unreadable_step_out(
    lessons: StepLessonMemory, field: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    good, bad, alone = (
        _step("s1", "click('save')"),
        _step("s2", "click('delete')"),
        _step("s1", "x", "r0"),
    )
    await lessons.store_memories([good, bad, alone])
    _spoil(lessons, bad["id"], field, value)
    _spoil(lessons, alone["id"], field, value)
    caplog.set_level(logging.WARNING, logger="episodex")
    for _ in range(2):  # reported once, however often it is read
        attempt = await lessons.init_episode("ticket-7", **SCOPE)
        assert attempt.rep == 2
        found = await lessons.retrieve_memories(PAGE, "save ticket 7")
        assert [lesson.memory.id for lesson in found] == [good["id"]]
        block = await lessons.lessons_block(PAGE, "save ticket 7")
        assert "save" in block and "delete" not in block
        resumed = await lessons.init_episode("ticket-7", **SCOPE, run_id="r1")
        assert resumed.rep == 1 and [m.id for m in lessons.steps] == [good["id"]]
        # A run whose every step is unreadable is resumed with no steps.
        only = await lessons.init_episode("ticket-7", **SCOPE, run_id="r0")
        assert only.resumed and lessons.steps == []
    for point_id in (bad["id"], alone["id"]):
        (warning,) = [r.getMessage() for r in caplog.records if point_id in r.getMessage()]
        assert "step" in warning and "reads leave it out" in warning
    assert await lessons.count("ticket-7", **SCOPE) == 3  # left out of reads, not deleted


@pytest.mark.parametrize(("field", "value"), BAD.values(), ids=list(BAD))
async def test_loading_every_step_names_an_unreadable_one(
    lessons: StepLessonMemory, field: str, value: Any
) -> None:
    good, bad = _step("s1", "click('save')"), _step("s2", "click('delete')")
    await lessons.store_memories([good, bad])
    _spoil(lessons, bad["id"], field, value)
    with pytest.raises(EngineError, match=rf"step memory {bad['id']}.*cannot be read back"):
        await lessons.load_all_memories_for_session("ticket-7", **SCOPE)
    await lessons.forget_session("ticket-7", **SCOPE)
    assert await lessons.load_all_memories_for_session("ticket-7", **SCOPE) == []
