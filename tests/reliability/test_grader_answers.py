"""Issue 14, item 12: reading an LLM grader's answer is bounded, linear and off the event loop.

Work is measured as the characters handed to the JSON decoder (for `raw_decode`, all it may
scan: from its start index to the end), so the test asserts the complexity, not a time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from episodex import EnvState, GradingError, LLMGrader, StepMemory

VERDICT = (
    '{"steps": [{"step_id": "s1", "correct": false, "explanation": "wrong button", '
    '"correction": "click Save"}], "task_success": false, "task_incomplete": "not saved"}'
)


def _steps() -> list[StepMemory]:
    return [
        StepMemory(
            step_id="s1",
            user_id="u",
            agent_id="a",
            session_id="task",
            run_id="r1",
            rep=1,
            step_num=1,
            env_pre=EnvState(url="/form"),
            internal_state="on the form",
            action="click('12')",
        )
    ]


class Decoded:
    """Counts what the JSON decoder is handed, and on which threads."""

    def __init__(self) -> None:
        self.chars = 0
        self.threads: set[int] = set()


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Decoded]:
    seen = Decoded()
    loads: Callable[..., Any] = json.loads
    raw_decode = json.JSONDecoder.raw_decode

    def counting_loads(s: str | bytes, *args: Any, **kwargs: Any) -> Any:
        seen.chars += len(s)
        seen.threads.add(threading.get_ident())
        return loads(s, *args, **kwargs)

    def counting_raw_decode(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[Any, int]:
        seen.chars += len(s) - idx
        seen.threads.add(threading.get_ident())
        return raw_decode(self, s, idx)

    monkeypatch.setattr(json, "loads", counting_loads)
    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting_raw_decode)
    yield seen


async def _grade(answer: str) -> Any:
    async def llm(prompt: str) -> str:
        return answer

    return await LLMGrader(llm, retries=0).grade(_steps(), task="save the form")


# Answers that made the old reader quadratic: many braces before the verdict.
SHAPES: dict[str, Callable[[int], str]] = {
    "prose braces": lambda n: "see {this " * n + VERDICT,
    "small objects": lambda n: '{"note": "n"} ' * n + VERDICT,
    "unclosed verdict": lambda n: '{"steps": [' + '{"step_id": "s1"}, ' * n + "\n" + VERDICT,
    "braces in a string": lambda n: VERDICT[:-1] + ', "why": "' + "{x} " * n + '"}',
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_reading_is_linear_in_the_answer(decoded: Decoded, shape: str) -> None:
    work: list[tuple[int, int]] = []
    for n in (2_000, 8_000, 24_000):  # the largest is about 234 KB for most shapes
        answer = SHAPES[shape](n)
        decoded.chars = 0
        result = await _grade(answer)
        assert [g.step_id for g in result.grades] == ["s1"]
        work.append((len(answer), decoded.chars))
    for size, chars in work:
        assert chars <= 3 * size, work  # each character decoded a bounded number of times
    (small, small_work), (big, big_work) = work[0], work[-1]
    assert big_work / small_work <= 1.2 * big / small, work


async def test_the_234_kb_answer_is_read(decoded: Decoded) -> None:
    prose = "The agent opened {the form} and [clicked] things. " * 4_800
    answer = f"Here is my verdict.\n{prose}\n```json\n{VERDICT}\n```\n{prose}"
    assert 230_000 < len(answer.encode()) < 500_000
    result = await _grade(answer)
    assert (result.task_success, result.grades[0].correction) == (False, "click Save")
    assert decoded.chars <= 3 * len(answer)


async def test_the_answer_is_read_off_the_event_loop(decoded: Decoded) -> None:
    await _grade("prose {" * 100 + VERDICT)
    assert decoded.threads
    assert threading.get_ident() not in decoded.threads


@pytest.mark.parametrize(
    "answer",
    [
        "{" * 5_000 + "}" * 5_000,
        '{"steps": ' + "[" * 3_000 + "]" * 3_000 + "}",
        "```json\n" + '{"a": ' * 2_000 + "1" + "}" * 2_000 + "\n```",
        '{"steps": [' + '{"a": ' * 100 + "1" + "}" * 100 + "]}",
    ],
    ids=["deep objects", "deep steps", "deep fenced", "just too deep"],
)
async def test_deep_brackets_are_a_grading_error(answer: str) -> None:
    with pytest.raises(GradingError, match="deeper than 64"):
        await _grade(answer)


@pytest.mark.parametrize("opener", ["[", "{", "{["])
async def test_stray_deep_brackets_before_the_verdict_do_not_hide_it(opener: str) -> None:
    result = await _grade(opener * 5_000 + VERDICT + "]" * 7 + "}" * 3)
    assert [g.step_id for g in result.grades] == ["s1"]


@pytest.mark.parametrize(
    "ref",
    ['"' + "1" * 5_000 + '"', "1" * 5_000, '"\u00b2"', '" 7 "', "-1", "true"],
    ids=["digits as text", "digits as number", "superscript", "spaced", "negative", "bool"],
)
async def test_a_bad_step_number_is_a_grading_error(ref: str) -> None:
    answer = '{"steps": [{"step": ' + ref + ', "correct": true}], "task_success": true}'
    with pytest.raises(GradingError):
        await _grade(answer)


async def test_a_step_number_names_its_step() -> None:
    result = await _grade('{"steps": [{"step": "1", "correct": true}], "task_success": true}')
    assert [g.step_id for g in result.grades] == ["s1"]


async def test_an_answer_over_the_bound_is_refused_unread(decoded: Decoded) -> None:
    with pytest.raises(GradingError, match="more than the"):
        await _grade(VERDICT + " " * (600 * 1024))
    assert decoded.chars == 0
