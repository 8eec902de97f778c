"""The records share one frozen base and the same small field types."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pydantic
import pytest
from episodex import (
    ConversationEpisode,
    EnvState,
    Episode,
    GradingResult,
    StepGrade,
    StepMemory,
    Task,
    TaskResult,
    ValidationError,
)

RECORDS = [ConversationEpisode, EnvState, StepMemory, StepGrade, GradingResult, Task, TaskResult]
RECORDS.append(Episode)  # pyright: ignore[reportArgumentType]


def test_every_record_has_one_frozen_base() -> None:
    bases = [
        {b for b in cls.__mro__ if b not in (cls, pydantic.BaseModel, object)} for cls in RECORDS
    ]
    common = set.intersection(*bases)
    assert common, "the records share no base below pydantic.BaseModel"
    for cls in RECORDS:
        assert cls.model_config.get("frozen") is True and cls.model_config.get("extra") == "forbid"


@pytest.mark.parametrize("cls", RECORDS)
def test_parse_locates_the_bad_record(cls: type) -> None:
    with pytest.raises(ValidationError, match=r"^record 7: "):
        cls.parse({"not_a_field": 1}, where="record 7: ")
    with pytest.raises(ValidationError, match="expected a mapping"):
        cls.parse("text")


def _step(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "step_id": "s1",
        "user_id": "u",
        "agent_id": "a",
        "session_id": "x",
        "run_id": "r",
        "rep": 1,
        "step_num": 1,
        "env_pre": {"url": "/"},
        "internal_state": "goal",
        "action": "click('1')",
    }
    return {**data, **changes}


def test_the_shared_types_check_the_same_way_everywhere() -> None:
    blank = "must contain text, not only whitespace"
    with pytest.raises(ValidationError, match=blank):
        ConversationEpisode.parse(
            {
                "short_summary": " ",
                "long_summary": "l",
                "user_id": "u",
                "agent_id": "a",
                "conversation_id": "c",
            }
        )
    with pytest.raises(ValidationError, match=blank):
        Task.parse({"instruction": "\n"})
    with pytest.raises(ValidationError, match=blank):
        StepMemory.parse(_step(action="  "))
    for bad in ({"x": float("nan")}, {"x": object()}):
        with pytest.raises(ValidationError, match="JSON object"):
            Episode.parse({"task": {"instruction": "t"}, "metadata": bad})
        with pytest.raises(ValidationError, match="JSON object"):
            StepMemory.parse(_step(metadata=bad))
        with pytest.raises(ValidationError, match="JSON object"):
            EnvState.parse({"extra": bad})
    # Times come back in UTC, naive ones taken as UTC.
    east = datetime(2026, 1, 2, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    naive = datetime(2026, 1, 2, 10, 0)
    for when in (east, naive):
        episode = Episode.parse({"task": {"instruction": "t"}, "completed_at": when})
        step = StepMemory.parse(_step(created_at=when))
        for stamp in (episode.completed_at, step.created_at):
            assert stamp.utcoffset() == timedelta(0) and stamp.hour == 10


def test_replace_returns_a_checked_copy() -> None:
    step = StepMemory.parse(_step())
    assert step.replace(outcome="success").outcome == "success"
    with pytest.raises(ValidationError, match="outcome"):
        step.replace(outcome="done")
    episode = ConversationEpisode.parse(
        {
            "short_summary": "s",
            "long_summary": "l",
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": "c",
        }
    )
    assert episode.replace(overlap=2).overlap == 2
