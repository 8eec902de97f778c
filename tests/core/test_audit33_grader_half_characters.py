"""An LLM grader whose JSON verdict spells half a character (`"\\ud83d"`) in its texts.

JSON lets a model write a lone surrogate as an escape. `LLMGrader.grade` built the step
grades from it and raised pydantic's own ValidationError (no episodex error, no second
ask): `end_episode` failed with an untyped error and the attempt's steps stayed ungraded.
The half character is now read as U+FFFD, as chat text is, and the grades are kept.
"""

from __future__ import annotations

import json

from episodex import EnvState, LLMGrader, StepMemory

VERDICT = (
    '{"steps": [{"step_id": "s1", "correct": false, "explanation": "clicked \\ud83d delete", '
    '"correction": "open \\udc00 the menu"}], "task_success": false, '
    '"task_incomplete": "half \\ud83d done"}'
)


def _step() -> StepMemory:
    return StepMemory(
        step_id="s1",
        user_id="u",
        agent_id="a",
        session_id="s",
        run_id="r",
        rep=1,
        step_num=1,
        env_pre=EnvState(url="/tickets", elements=["[1] delete"]),
        internal_state="on the ticket list",
        action="click('1')",
    )


async def test_half_a_character_in_the_verdict_is_read_and_the_grades_kept() -> None:
    prompts: list[str] = []

    async def llm(prompt: str) -> str:
        prompts.append(prompt)
        return VERDICT

    assert json.loads(VERDICT)["task_incomplete"] == "half \ud83d done"
    result = await LLMGrader(llm).grade([_step()], task="Set ticket 7 to High")
    [grade] = result.grades
    assert grade.explanation == "clicked \ufffd delete"
    assert grade.correction == "open \ufffd the menu"
    assert result.task_incomplete == "half \ufffd done"
    assert len(prompts) == 1
