"""A step id that is not a string is refused with `ValidationError`, the steps unchanged.

`record_step_start(step_id=...)` and `record_step_end(..., step_id=...)` looked the id up
among the attempt's steps before checking it: an unhashable one (a list, a dict) raised a
bare `TypeError` from the lookup instead of the typed error every other bad input gets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from episodex import StepLessonMemory, ValidationError

PAGE = {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]}


@pytest.mark.parametrize("bad", [["s1"], {"id": "s1"}, 5, "", "   "])
def test_a_bad_step_id_is_a_validation_error(lessons: StepLessonMemory, bad: Any) -> None:
    async def main() -> None:
        await lessons.init_episode("ticket-7", user_id="u", agent_id="web")
        await lessons.record_step_start(env_pre=PAGE, internal_state="a", action="click('1')")
        before = lessons.steps
        with pytest.raises(ValidationError, match="step_id"):
            await lessons.record_step_start(
                env_pre=PAGE, internal_state="b", action="click('2')", step_id=bad
            )
        with pytest.raises(ValidationError, match="step_id"):
            await lessons.record_step_end(PAGE, step_id=bad)
        assert lessons.steps == before

    asyncio.run(main())
