"""Step-lesson data: StepMemory, EnvState, grades, action parsing; every bad input is a clear error."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from episodex import (
    EnvState,
    EpisodexError,
    GradingResult,
    RetrievedLesson,
    StepGrade,
    StepMemory,
    ValidationError,
)
from episodex._lessons.model import action_parts, element_set


def step(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "step_id": "rep1-step1",
        "user_id": "u1",
        "agent_id": "web",
        "session_id": "ticket-7",
        "run_id": "run-1",
        "rep": 1,
        "step_num": 1,
        "env_pre": {
            "url": "https://app.test/tickets/7?tab=1",
            "elements": ["[12] button 'Priority'"],
        },
        "internal_state": "Goal: set priority to High",
        "action": "click('12')",
    }
    base.update(changes)
    return base


def test_minimal_step_memory_gets_defaults() -> None:
    m = StepMemory.parse(step())
    assert m.outcome == "pending"
    assert not m.graded
    assert m.kind is None
    assert uuid.UUID(m.id)
    assert m.created_at.tzinfo is UTC
    assert m.env_post is None and m.internal_state_embedding is None
    assert m.metadata == {}
    assert m.env_pre.path == "/tickets/7"


def test_all_fields_are_kept() -> None:
    m = StepMemory.parse(
        step(
            think="The dropdown is the way",
            internal_state_embedding=[0.1, -0.2],
            action_element_text="Priority dropdown",
            env_post={
                "url": "/tickets/7",
                "page": "Ticket 7",
                "elements": ["x"],
                "extra": {"k": [1]},
            },
            outcome="failure",
            outcome_reason="wrong",
            correction="click('30')",
            confidence=0.5,
            task_incomplete="never set the priority",
            metadata={"model": "gpt", "n": 2},
        )
    )
    assert m.kind == "AVOID"
    assert m.graded
    assert m.env_post is not None and m.env_post.extra == {"k": [1]}
    assert m.confidence == 0.5
    assert m.replace(outcome="success").kind == "REPEAT"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"outcome": "done"}, "outcome"),
        ({"action": "   "}, "action: must contain text"),
        ({"internal_state": ""}, "internal_state: must contain text"),
        ({"rep": 0}, "rep"),
        ({"step_num": True}, "step_num"),
        ({"user_id": ""}, "user_id"),
        ({"id": "not-a-uuid"}, "id: must be a UUID"),
        ({"confidence": 1.5}, "confidence"),
        ({"internal_state_embedding": [float("nan")]}, "finite"),
        ({"internal_state_embedding": []}, "must not be empty"),
        ({"metadata": {"x": object()}}, "metadata"),
        ({"env_pre": {"elements": "one string"}}, "env_pre.elements"),
        ({"env_pre": {"url": "/", "colour": "red"}}, "env_pre.colour is not a field"),
        ({"surprise": 1}, "surprise is not a field of step memory"),
    ],
)
def test_bad_fields_raise_a_clear_validation_error(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match="invalid step memory") as info:
        StepMemory.parse(step(**changes))
    assert message in str(info.value)
    assert isinstance(info.value, EpisodexError) and isinstance(info.value, ValueError)


def test_missing_required_fields_are_named() -> None:
    data = step()
    del data["action"], data["session_id"]
    with pytest.raises(ValidationError, match="action is required") as info:
        StepMemory.parse(data)
    assert "session_id is required" in str(info.value)


def test_not_a_mapping_is_rejected() -> None:
    with pytest.raises(ValidationError, match="expected a mapping of step memory fields"):
        StepMemory.parse(["step"])  # type: ignore[arg-type]


def test_blank_optional_texts_are_absent_and_times_are_utc() -> None:
    naive = datetime(2024, 5, 1, 12, 0)
    other = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    m = StepMemory.parse(step(think="", correction="  ", created_at=naive))
    assert m.think is None and m.correction is None
    assert m.created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert StepMemory.parse(step(created_at=other)).created_at == datetime(
        2024, 5, 1, 12, 0, tzinfo=UTC
    )


def test_env_state_path_and_element_set() -> None:
    assert EnvState(url="https://a.b/x/y?q=1#f").path == "/x/y"
    assert EnvState(url="https://a.b").path == "/"
    assert EnvState(url="/inbox?page=2").path == "/inbox"
    assert EnvState(page="Settings").path == "Settings"
    assert EnvState().path == "/"
    env = EnvState(elements=["[1]  Button 'OK'", "[1] button 'ok'", "  "])
    assert element_set(env) == frozenset({"[1] button 'ok'"})
    with pytest.raises(ValidationError, match="invalid environment state"):
        EnvState.parse({"url": 3})


@pytest.mark.parametrize(
    ("action", "verb", "args"),
    [
        ("click('42')", "click", ("42",)),
        ('click( "42" )', "click", ("42",)),
        ("fill('7', 'High, urgent')", "fill", ("7", "High, urgent")),
        ("select_option('3', ['a', 'b'])", "select_option", ("3", "['a', 'b']")),
        ("scroll(0, -200)", "scroll", ("0", "-200")),
        ("noop()", "noop", ()),
        ("press Enter", "press Enter", ()),
        ("click(__import__('os'))", "click", ("__import__('os')",)),
    ],
)
def test_action_parts(action: str, verb: str, args: tuple[str, ...]) -> None:
    parts = action_parts(action)
    assert (parts.verb, parts.args) == (verb, args)


def test_action_parts_target_and_value() -> None:
    parts = action_parts("fill('7', 'High')")
    assert parts.target == "7" and parts.value == "High"
    assert action_parts("click('1')").value is None
    assert action_parts("stop").target is None


def test_grades_validate() -> None:
    grade = StepGrade.parse(
        {"step_id": "s1", "correct": False, "explanation": "", "correction": "do x"}
    )
    assert grade.explanation is None and grade.confidence == 1.0
    with pytest.raises(ValidationError, match="confidence"):
        StepGrade.parse({"step_id": "s1", "correct": True, "confidence": -0.1})
    with pytest.raises(ValidationError, match="correct"):
        StepGrade.parse({"step_id": "s1", "correct": "yes"})
    with pytest.raises(ValidationError, match="graded twice"):
        GradingResult.parse(
            {"grades": [{"step_id": "a", "correct": True}] * 2, "task_success": True}
        )
    with pytest.raises(ValidationError, match="leave it empty when task_success is true"):
        GradingResult.parse({"task_success": True, "task_incomplete": "but it failed"})
    with pytest.raises(ValidationError, match="task_success is required"):
        GradingResult.parse({"grades": []})
    ok = GradingResult.parse({"grades": [grade], "task_success": False, "task_incomplete": "no"})
    assert ok.grades == [grade]


def test_retrieved_lesson_kind() -> None:
    good = StepMemory.parse(step(outcome="success"))
    bad = StepMemory.parse(step(outcome="failure"))
    assert RetrievedLesson(good, 1.0, 0.5, 0.8).kind == "REPEAT"
    assert RetrievedLesson(bad, 1.0, 0.5, 0.8).kind == "AVOID"
