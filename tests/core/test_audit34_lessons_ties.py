"""Lessons that tie on every score come out in one order, whatever order they were read in.

The last tie-break of `rank_lessons` was the order the candidates came in (the engine's scan
order), so two equal lessons from two runs could swap places between two reads of the same
data, and with `final_k=1` a different lesson was shown. They are now ordered by point id.
"""

from __future__ import annotations

import itertools
from typing import Any

from episodex import EnvState, StepMemory
from episodex._lessons.ranking import rank_lessons
from episodex._lessons.store import in_order

ENV = {"url": "https://app.test/tickets/7", "elements": ["Save", "Cancel"]}


def _memory(point_id: str, run: str, action: str, outcome: str = "success") -> StepMemory:
    data: dict[str, Any] = {
        "id": point_id,
        "step_id": "s1",
        "user_id": "alice",
        "agent_id": "web",
        "session_id": "t7",
        "run_id": run,
        "rep": 1,
        "step_num": 1,
        "env_pre": ENV,
        "internal_state": "same state",
        "internal_state_embedding": [1.0, 0.0],
        "action": action,
        "outcome": outcome,
        "created_at": "2025-01-01T00:00:00Z",
    }
    return StepMemory.parse(data)


IDS = [
    "00000000-0000-4000-8000-00000000000c",
    "00000000-0000-4000-8000-00000000000a",
    "00000000-0000-4000-8000-00000000000b",
]


def test_equal_lessons_come_out_in_point_id_order_whatever_the_read_order() -> None:
    memories = [_memory(pid, f"r{i}", f"click('{i}')") for i, pid in enumerate(IDS)]
    seen: set[tuple[str, ...]] = set()
    for order in itertools.permutations(memories):
        for final_k in (1, 2, 3):
            ranked = rank_lessons(order, EnvState.parse(ENV), [1.0, 0.0], final_k=final_k)
            seen.add(tuple(r.memory.id for r in ranked))
    assert seen == {tuple(sorted(IDS)[:k]) for k in (1, 2, 3)}


def test_steps_equal_in_every_sorted_field_are_read_back_in_point_id_order() -> None:
    memories = [_memory(pid, "r1", f"click('{i}')") for i, pid in enumerate(IDS)]
    orders = {tuple(m.id for m in in_order(list(p))) for p in itertools.permutations(memories)}
    assert orders == {tuple(sorted(IDS))}
