"""Which entries tie for the best score depends on the scores, not on the order they were stored.

Two scores tie when they are within a relative 1e-9 of each other, and that is not transitive:
with scores 1, 1 + 0.8e-9 and 1 + 1.6e-9 the first ties the second, the second ties the third,
and the first does not tie the third. `_best` compared each entry, newest first, with the best
found so far, so the winners depended on the order of storing: stored oldest to newest as
C, B, A (A newest) it returned only C, leaving out B, which ties C; stored as C, A, B it
returned all three, A included, which does not tie C. Now the winners are every entry tied
with the highest score itself, newest first, whatever the order.
"""

from __future__ import annotations

import itertools

from episodex import MemKey, WorkingMemory

A, B, C = MemKey.OBSERVATION, MemKey.THOUGHT, MemKey.REFLECTION
WEIGHTS = {A: 1.0, B: 1.0 + 0.8e-9, C: 1.0 + 1.6e-9}


def test_the_winners_are_the_same_whatever_the_order_of_storing() -> None:
    for order in itertools.permutations((A, B, C)):
        wm = WorkingMemory()
        for tag in order:
            wm.store(tag.value, tag)
        newest_first = [tag.value for tag in reversed(order)]
        expected = [name for name in newest_first if name in (B.value, C.value)]
        assert wm.retrieve_all(WEIGHTS) == expected, order
        assert wm.retrieve(WEIGHTS) == expected[0], order


def test_an_exact_tie_still_goes_to_the_newest() -> None:
    wm = WorkingMemory()
    wm.store("older", A)
    wm.store("newer", B)
    assert wm.retrieve({A: 0.1 + 0.2, B: 0.3}) == "newer"
    assert wm.retrieve_all({A: 0.1 + 0.2, B: 0.3}) == ["newer", "older"]


def test_scores_not_above_zero_find_nothing() -> None:
    wm = WorkingMemory()
    wm.store("the door is locked", A)
    assert wm.retrieve({A: -1.0}) is None
    assert wm.retrieve_all({B: 1.0}) == []
    assert WorkingMemory().retrieve_all({A: 1.0}) == []
