"""Graders: the programmatic grader's rules, and the LLM grader on a fake model (the only fake)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    EnvState,
    Grader,
    GradingError,
    LLMGrader,
    ProgrammaticGrader,
    StepMemory,
    ValidationError,
)
from episodex._lessons.graders import parse_grading


def steps(*actions: str, posts: list[list[str]] | None = None) -> list[StepMemory]:
    out: list[StepMemory] = []
    for i, action in enumerate(actions, start=1):
        out.append(
            StepMemory.parse(
                {
                    "step_id": f"rep1-step{i}",
                    "user_id": "u",
                    "agent_id": "a",
                    "session_id": "s",
                    "run_id": "r",
                    "rep": 1,
                    "step_num": i,
                    "env_pre": {"url": f"/page{i}", "elements": [f"[{i}] button"]},
                    "internal_state": f"state {i}",
                    "action": action,
                    "env_post": {"url": "/after", "elements": posts[i - 1]} if posts else None,
                }
            )
        )
    return out


class FakeLLM:
    """A scripted model: returns its answers in order and keeps the prompts it got."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answers.pop(0)


async def test_expected_actions_in_order_quotes_ignored() -> None:
    grader = ProgrammaticGrader(
        ["click('12')", 'fill("5", "High")'], descriptions={"click('12')": "open it"}
    )
    assert isinstance(grader, Grader)
    result = await grader.grade(
        steps("click('13')", 'click("12")', "fill('5', 'High')", "click('9')"), task="t"
    )
    verdicts = [(g.step_id, g.correct) for g in result.grades]
    assert verdicts == [
        ("rep1-step1", False),
        ("rep1-step2", True),
        ("rep1-step3", True),
        ("rep1-step4", False),
    ]
    assert result.grades[0].correction == "click('12') (open it)"
    assert "the next step was click('12') (open it)" in (result.grades[0].explanation or "")
    assert result.grades[3].correction == "Stop: the task is complete"
    assert result.task_success is True and result.task_incomplete is None


async def test_expected_actions_not_all_done_is_a_failed_task() -> None:
    result = await ProgrammaticGrader(["click('1')", "click('2')"]).grade(
        steps("click('1')"), task=None
    )
    assert result.task_success is False
    assert result.task_incomplete == "1 expected action(s) not done: click('2')"


async def test_check_over_env_post() -> None:
    def check(env: EnvState) -> bool | tuple[bool, str]:
        if "error" in env.elements:
            return False, "an error banner appeared"
        return "done" in env.elements

    grader = ProgrammaticGrader(check=check)
    result = await grader.grade(
        steps("a()", "b()", "c()", posts=[["error"], ["x"], ["done"]]), task=None
    )
    assert [g.correct for g in result.grades] == [False, False, True]
    assert result.grades[0].explanation == "an error banner appeared"
    assert result.grades[1].explanation == "The page after this step failed the check"
    assert result.task_success is True
    ungraded = await grader.grade(steps("a()"), task=None)  # no env_post: no grade, no success
    assert ungraded.grades == [] and ungraded.task_success is False


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"expected_actions": ["a()"], "check": lambda e: True},  # pyright: ignore[reportUnknownLambdaType]
        {"expected_actions": []},
        {"expected_actions": "click('1')"},
        {"expected_actions": ["ok()", ""]},
        {"check": 3},
    ],
)
def test_programmatic_grader_configuration_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ProgrammaticGrader(**kwargs)


async def test_llm_grader_reads_fenced_json_amid_prose() -> None:
    answer = {
        "steps": [
            {
                "step_id": "rep1-step1",
                "correct": False,
                "explanation": "deleted the ticket",
                "correction": "open the priority dropdown",
                "confidence": 0.8,
            },
            {"step": 2, "verdict": "correct", "reason": "opened it", "confidence": "0.9"},
        ],
        "task_success": "no",
        "task_incomplete": "priority never changed",
    }
    llm = FakeLLM(f"Here you go:\n```json\n{json.dumps(answer)}\n```\nHope it helps {{not json}}")
    grader = LLMGrader(llm)
    result = await grader.grade(steps("click('13')", "click('12')"), task="Set ticket 7 to High")
    assert len(llm.prompts) == 1
    assert "Task: Set ticket 7 to High" in llm.prompts[0]
    assert "step_id: rep1-step2" in llm.prompts[0] and "action: click('12')" in llm.prompts[0]
    first, second = result.grades
    assert (first.correct, first.correction, first.confidence) == (
        False,
        "open the priority dropdown",
        0.8,
    )
    assert (second.step_id, second.correct, second.explanation, second.confidence) == (
        "rep1-step2",
        True,
        "opened it",
        0.9,
    )
    assert result.task_success is False and result.task_incomplete == "priority never changed"


async def test_llm_grader_asks_again_then_raises_on_garbage() -> None:
    llm = FakeLLM(
        "I think it went well!",
        '{"steps": [{"step_id": "rep1-step1", "correct": true}], "task_success": true}',
    )
    result = await LLMGrader(llm, retries=1).grade(steps("click('1')"), task=None)
    assert result.task_success is True and result.grades[0].correct is True
    assert "could not be used" in llm.prompts[1]

    garbage = FakeLLM("nope", "still nope", "never")
    with pytest.raises(GradingError, match="no JSON object") as info:
        await LLMGrader(garbage, retries=2).grade(steps("click('1')"), task=None)
    assert isinstance(info.value, ValidationError)
    assert len(garbage.prompts) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"steps": [{"step_id": "zzz", "correct": true}], "task_success": true}', "not one of"),
        (
            '{"steps": [{"step_id": "rep1-step1", "correct": "maybe"}], "task_success": true}',
            "true or false",
        ),
        (
            '{"steps": [{"step_id": "rep1-step1", "correct": true, "confidence": "high"}], "task_success": true}',
            "confidence must be a number",
        ),
        ('{"steps": "all good", "task_success": true}', "'steps' must be a list"),
        ('{"steps": [3], "task_success": true}', "must be an object"),
        ('{"steps": [], "task_success": null}', "task_success must be true or false"),
        (
            '{"steps": [{"step_id": "rep1-step1", "correct": true}, {"step": 1, "correct": false}],'
            ' "task_success": true}',
            "graded twice",
        ),
        (
            '{"steps": [{"step_id": "rep1-step1", "correct": true, "explanation": 5}], "task_success": true}',
            "explanation must be text",
        ),
    ],
)
def test_parse_grading_rejects_unusable_answers(text: str, message: str) -> None:
    with pytest.raises(GradingError, match=message):
        parse_grading(text, steps("click('1')"))


def test_parse_grading_drops_task_incomplete_of_a_success_and_clamps_confidence() -> None:
    text = '{"grades": [{"step_id": "rep1-step1", "correct": true, "confidence": 7}], "task_success": true, "task_incomplete": "x"}'
    result = parse_grading(text, steps("click('1')"))
    assert result.task_incomplete is None and result.grades[0].confidence == 1.0
    with pytest.raises(GradingError, match="must be text"):
        parse_grading(None, [])


def test_llm_grader_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        LLMGrader("not callable")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="retries"):
        LLMGrader(FakeLLM(), retries=-1)
