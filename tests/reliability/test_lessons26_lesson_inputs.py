"""Bad lesson input gets a typed error and leaves the stored lessons unchanged.

`store_memories` took two step memories with the same id in one call: the second silently
replaced the first, and both ids came back as stored. Two memories of the same step (same
run and `step_id`) were both stored, so a grade for that step id graded two copies and a
resumed attempt kept one of them. `format_lessons(max_chars=...)` accepted 0, negative sizes
and `True` (every lesson became `…`), and a string, float or None failed with `TypeError`, as
did `store_memories(None)`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from episodex import StepLessonMemory, StepMemory, ValidationError, format_lessons


def _step(step_id: str, action: str, **extra: Any) -> StepMemory:
    return StepMemory.parse(
        {
            "step_id": step_id,
            "user_id": "u1",
            "agent_id": "web",
            "session_id": "ticket-7",
            "run_id": "run-1",
            "rep": 1,
            "step_num": int(step_id.removeprefix("s")),
            "env_pre": {"url": "https://app.example/tickets/7", "elements": ["[1] a"]},
            "internal_state": "Set ticket 7 to High",
            "action": action,
            "outcome": "failure",
            "outcome_reason": "the wrong button",
            **extra,
        }
    )


def _stored(lessons: StepLessonMemory) -> list[tuple[str, str, str]]:
    loaded = asyncio.run(
        lessons.load_all_memories_for_session("ticket-7", user_id="u1", agent_id="web")
    )
    return [(m.id, m.step_id, m.action) for m in loaded]


def test_the_same_id_twice_in_one_call_is_refused(lessons: StepLessonMemory) -> None:
    first = _step("s1", "click('1')")
    again = _step("s2", "click('2')", id=first.id)
    with pytest.raises(ValidationError, match="memory 1"):
        asyncio.run(lessons.store_memories([first, again]))
    assert _stored(lessons) == []


def test_the_same_step_twice_in_one_call_is_refused(lessons: StepLessonMemory) -> None:
    kept = _step("s1", "click('1')")
    asyncio.run(lessons.store_memories([kept]))
    with pytest.raises(ValidationError, match="step_id 's2'"):
        asyncio.run(lessons.store_memories([_step("s2", "click('2')"), _step("s2", "click('3')")]))
    assert _stored(lessons) == [(kept.id, "s1", "click('1')")]


def test_the_same_step_id_in_two_runs_is_still_accepted(lessons: StepLessonMemory) -> None:
    one = _step("s1", "click('1')")
    other = _step("s1", "click('2')", run_id="run-2", rep=2)
    asyncio.run(lessons.store_memories([one, other]))
    assert sorted(_stored(lessons)) == sorted(
        [(one.id, "s1", "click('1')"), (other.id, "s1", "click('2')")]
    )


@pytest.mark.parametrize("memories", [None, 5, 2.5])
def test_store_memories_refuses_what_is_not_a_list(
    lessons: StepLessonMemory, memories: Any
) -> None:
    with pytest.raises(ValidationError, match="list of step memories"):
        asyncio.run(lessons.store_memories(memories))
    assert _stored(lessons) == []


@pytest.mark.parametrize("max_chars", [0, -5, True, "300", 2.5, None])
def test_format_lessons_refuses_a_bad_max_chars(max_chars: Any) -> None:
    with pytest.raises(ValidationError, match="max_chars"):
        format_lessons([_step("s1", "click('1')")], max_chars=max_chars)


def test_format_lessons_refuses_a_single_memory_not_in_a_list() -> None:
    with pytest.raises(ValidationError, match="list"):
        format_lessons(_step("s1", "click('1')"))  # pyright: ignore[reportArgumentType]


def test_format_lessons_still_cuts_at_max_chars() -> None:
    block = format_lessons([_step("s1", "click('1')", outcome_reason="why " * 50)], max_chars=40)
    failed = next(line for line in block.splitlines() if "This failed:" in line)
    assert len(failed.split("This failed: ", 1)[1]) == 40
