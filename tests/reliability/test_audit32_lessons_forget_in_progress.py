"""A forgotten session stays forgotten: its attempt in progress cannot store its steps again.

`forget_session` deleted the session's stored steps but left its attempt in progress in
memory, so the `end_episode` (or `persist_memories`) that followed stored the forgotten steps
again, with their states and actions: a user who asked for a session to be forgotten had it
back a moment later. The session's attempts in progress are now let go with it; a call on one
raises `ValidationError` and stores nothing. A forget that fails keeps them, as it keeps the
stored steps.
"""

from __future__ import annotations

import pytest
from episodex import (
    EngineUnavailableError,
    ProgrammaticGrader,
    StepLessonMemory,
    ValidationError,
    open_engine,
)
from episodex.testing import FailingEngine, HashEmbedder

PAGE = {"url": "https://desk.example/billing", "elements": ["[12] button 'Refund'"]}
ALICE = {"user_id": "alice", "agent_id": "web"}
GRADER = ProgrammaticGrader(expected_actions=["click('12')"])


async def _started(lessons: StepLessonMemory, session: str) -> None:
    await lessons.init_episode(session, **ALICE, task="refund")
    await lessons.record_step_start(
        env_pre=PAGE, internal_state="card 4111 1111 1111 1111", action="click('12')"
    )
    await lessons.persist_memories()


@pytest.fixture
def engine() -> FailingEngine:
    return FailingEngine(open_engine(location=":memory:"))


async def test_a_forgotten_sessions_attempt_stores_nothing_again(engine: FailingEngine) -> None:
    lessons = StepLessonMemory(engine, HashEmbedder(), grader=GRADER)
    await _started(lessons, "billing")
    attempt = lessons.episode
    assert attempt is not None
    assert await lessons.forget_session("billing", **ALICE) == 1
    for call in (lessons.end_episode, lessons.persist_memories):
        with pytest.raises(ValidationError, match="init_episode"):
            await call()
    with pytest.raises(ValidationError, match="not in progress"):
        await lessons.persist_memories(attempt=attempt)
    assert await lessons.count("billing", **ALICE) == 0
    assert await lessons.load_all_memories_for_session("billing", **ALICE) == []
    # The session starts again as a new one.
    again = await lessons.init_episode("billing", **ALICE, task="refund")
    assert again.rep == 1


async def test_another_sessions_attempt_goes_on(engine: FailingEngine) -> None:
    lessons = StepLessonMemory(engine, HashEmbedder(), grader=GRADER)
    await _started(lessons, "billing")
    await lessons.forget_session("shipping", **ALICE)
    await lessons.end_episode(final_env=PAGE)
    assert await lessons.count("billing", **ALICE) == 1


async def test_a_failed_forget_keeps_the_attempt_and_the_steps(engine: FailingEngine) -> None:
    lessons = StepLessonMemory(engine, HashEmbedder(), grader=GRADER)
    await _started(lessons, "billing")
    engine.fail_next("delete")
    with pytest.raises(EngineUnavailableError):
        await lessons.forget_session("billing", **ALICE)
    # Nothing was forgotten: the attempt goes on and ends as if the forget had not been asked.
    result = await lessons.end_episode(final_env=PAGE)
    assert result is not None
    assert [m.outcome for m in lessons.steps] == ["success"]
    assert await lessons.count("billing", **ALICE) == 1
