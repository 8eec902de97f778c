"""`export_memories` given something other than a list of steps says so, in every format.

A single step exported as a prompt was iterated as the model's fields and refused with
"expected a mapping of step memory fields, got tuple"; None or a number failed in every
format with Python's raw TypeError (`'NoneType' object is not iterable`), outside
episodex's errors, as did `format_lessons`. Each is now a `ValidationError` naming what the
function takes.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import StepMemory, ValidationError, export_memories, format_lessons


def _step() -> StepMemory:
    return StepMemory.parse(
        {
            "step_id": "s1",
            "user_id": "u",
            "agent_id": "web",
            "session_id": "ticket-7",
            "run_id": "r1",
            "rep": 1,
            "step_num": 1,
            "outcome": "failure",
            "env_pre": {"url": "https://app.example/tickets/7", "elements": ["[1] b"]},
            "internal_state": "save ticket 7",
            "action": "click [1]",
        }
    )


@pytest.mark.parametrize("fmt", ["json", "csv", "prompt"])
@pytest.mark.parametrize("given", ["step", None, 5], ids=["one-step", "none", "number"])
def test_export_refuses_what_is_not_a_list_of_steps(fmt: Any, given: object) -> None:
    value = _step() if given == "step" else given
    with pytest.raises(ValidationError, match="export_memories takes a list of step memories"):
        export_memories(value, fmt)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("fmt", ["json", "csv", "prompt"])
def test_export_still_takes_any_iterable_of_steps(fmt: Any) -> None:
    step = _step()
    assert export_memories(iter([step]), fmt) == export_memories([step], fmt)


@pytest.mark.parametrize("given", [None, 5], ids=["none", "number"])
def test_format_lessons_refuses_what_is_not_a_list(given: object) -> None:
    with pytest.raises(ValidationError, match="format_lessons takes a list of lessons"):
        format_lessons(given)  # pyright: ignore[reportArgumentType]
