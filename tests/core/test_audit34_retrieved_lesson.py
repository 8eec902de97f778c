"""A `RetrievedLesson` is checked when made, as every other model is.

It took any score: NaN (which sorts anywhere and shows as "nan%" in the block), infinity,
an overlap outside [0, 1], a cosine outside [-1, 1], a bool, or no `StepMemory` at all. Each
is now a `ValidationError`; weights so large that the score overflows are refused by
`rank_lessons` before it ranks.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from episodex import EnvState, RetrievedLesson, StepMemory, ValidationError
from episodex._lessons.ranking import rank_lessons

ENV = {"url": "https://app.test/tickets/7", "elements": ["Save"]}


def _memory() -> StepMemory:
    data: dict[str, Any] = {
        "step_id": "s1",
        "user_id": "alice",
        "agent_id": "web",
        "session_id": "t7",
        "run_id": "r1",
        "rep": 1,
        "step_num": 1,
        "env_pre": ENV,
        "internal_state": "state",
        "internal_state_embedding": [1.0, 0.0],
        "action": "click('1')",
        "outcome": "success",
    }
    return StepMemory.parse(data)


def test_a_lesson_with_scores_in_range_is_made() -> None:
    lesson = RetrievedLesson(_memory(), 1, -1.0, 0.3)
    assert (lesson.env_score, lesson.state_score, lesson.score) == (1.0, -1.0, 0.3)


@pytest.mark.parametrize(
    ("env", "state", "score"),
    [
        (math.nan, 0.0, 0.0),
        (0.5, math.nan, 0.0),
        (0.5, 0.0, math.nan),
        (0.5, 0.0, math.inf),
        (0.5, 0.0, -math.inf),
        (1.5, 0.0, 0.0),
        (-0.1, 0.0, 0.0),
        (0.5, 1.5, 0.0),
        (0.5, -2.0, 0.0),
        (True, 0.0, 0.0),
        (0.5, 0.0, "0.9"),
    ],
)
def test_a_lesson_with_a_score_out_of_range_is_refused(env: Any, state: Any, score: Any) -> None:
    with pytest.raises(ValidationError):
        RetrievedLesson(_memory(), env, state, score)


def test_a_lesson_without_a_step_memory_is_refused() -> None:
    with pytest.raises(ValidationError, match="StepMemory"):
        RetrievedLesson({"action": "click('1')"}, 0.5, 0.0, 0.5)  # type: ignore[arg-type]


def test_weights_whose_score_overflows_are_refused_before_ranking() -> None:
    with pytest.raises(ValidationError, match="weight"):
        rank_lessons(
            [_memory()], EnvState.parse(ENV), [1.0, 0.0], env_weight=1e308, state_weight=1e308
        )
