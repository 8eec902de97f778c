"""A lesson whose stored vector holds huge or tiny numbers is compared by its direction.

A step imported with a vector no model made (no `embedding_model`, so the store keeps it) may
hold numbers like 1e200: finite, so every check let them in, but the vector's length
overflowed to infinity and its cosine with the query was NaN. The lesson then ranked anywhere
(NaN compares false both ways) and its block line read "0%". Tiny numbers (1e-200) underflowed
the length to 0 and the lesson lost its state score. Both are now compared by direction alone.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from episodex import EnvState, StepMemory
from episodex._lessons.ranking import rank_lessons

ENV = {"url": "https://app.test/tickets/7", "elements": ["Save", "Cancel"]}


def _memory(step: int, vector: list[float], outcome: str = "success") -> StepMemory:
    data: dict[str, Any] = {
        "step_id": f"s{step}",
        "user_id": "alice",
        "agent_id": "web",
        "session_id": "t7",
        "run_id": "r1",
        "rep": 1,
        "step_num": step,
        "env_pre": ENV,
        "internal_state": f"state {step}",
        "internal_state_embedding": vector,
        "action": f"click('{step}')",
        "outcome": outcome,
    }
    return StepMemory.parse(data)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e154, 3e-308])
def test_a_vector_of_huge_or_tiny_numbers_is_compared_by_its_direction(scale: float) -> None:
    query = [1.0, 0.0, 0.0]
    odd = _memory(1, [scale, 0.0, 0.0])  # the query's direction
    plain = _memory(2, [0.0, 1.0, 0.0])  # at right angles to it
    ranked = rank_lessons([plain, odd], EnvState.parse(ENV), query, final_k=2)
    assert [r.memory.step_num for r in ranked] == [1, 2]
    first, second = ranked
    assert math.isclose(first.state_score, 1.0)
    assert math.isclose(second.state_score, 0.0, abs_tol=1e-12)
    assert all(math.isfinite(r.score) for r in ranked)


def test_a_query_of_huge_numbers_is_compared_by_its_direction() -> None:
    ranked = rank_lessons(
        [_memory(1, [0.0, 1.0]), _memory(2, [1.0, 0.0])],
        EnvState.parse(ENV),
        [1e300, 0.0],
        final_k=2,
    )
    assert [r.memory.step_num for r in ranked] == [2, 1]
    assert math.isclose(ranked[0].state_score, 1.0)


def test_a_vector_with_no_direction_has_no_state_score() -> None:
    ranked = rank_lessons([_memory(1, [0.0, 0.0])], EnvState.parse(ENV), [1.0, 0.0], final_k=1)
    assert [r.state_score for r in ranked] == [0.0]
