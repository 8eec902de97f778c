"""Tag weights are read at every size: tiny ones count, huge ones do not overflow.

An entry's score was the plain float sum of its tags' weights, and a score within 1e-12 of
another (or of 0) was a tie. So a weight below 1e-12 acted as 0: `retrieve({OBSERVATION:
1e-13})` gave None with an observation stored, `{OBSERVATION: 2e-13, THOUGHT: 1e-13}` ranked
the two tags as equal, and `delete` with such weights deleted nothing. At the other end, huge
weights overflowed to inf in an order that depended on the set's iteration order, so an entry
whose weights summed to 1.5e308 tied one summing to 3e308 (and the newer won), and an entry
summing to exactly 0 could score inf and be retrieved. Now the weights are scaled by a power of
two (exact) so the largest is below 1, summed exactly (`math.fsum`), and two scores tie when
they are within a relative 1e-9 of each other or within 1e-12 of the weights that made them;
weights too far apart to scale (over 2**1000 times) raise `ValidationError`, changing nothing.
"""

from __future__ import annotations

import pytest
from episodex import MemKey, ValidationError, WorkingMemory

OBS, THOUGHT = MemKey.OBSERVATION, MemKey.THOUGHT


def test_a_tiny_weight_still_finds_its_entry() -> None:
    for weight in (1e-13, 1e-200, 5e-324):
        wm = WorkingMemory()
        obs = wm.store("the door is locked", OBS)
        assert wm.retrieve({OBS: weight}) == "the door is locked"
        assert wm.retrieve_all_entries({OBS: weight}) == [obs]
        assert {OBS: weight} in wm
        assert wm.add_tags({OBS: weight}, MemKey.REFLECTION) == 1
        assert wm.delete({OBS: weight}) == 1
        assert len(wm) == 0


def test_tiny_weights_rank_by_their_sizes() -> None:
    wm = WorkingMemory()
    wm.store("the door is locked", OBS)
    wm.store("find the key", THOUGHT)  # newer: it would win a tie
    assert wm.retrieve({OBS: 2e-13, THOUGHT: 1e-13}) == "the door is locked"
    assert wm.retrieve_all({OBS: 2e-13, THOUGHT: 1e-13}) == ["the door is locked"]
    # A tiny weight beside a large one still counts when no entry carries the large one.
    only_thought = WorkingMemory()
    only_thought.store("find the key", THOUGHT)
    assert only_thought.retrieve({OBS: 1.0, THOUGHT: 1e-13}) == "find the key"


def test_huge_weights_rank_as_their_exact_sums() -> None:
    # The order a set of tags is summed in follows the strings' hashes, so the overflow hit
    # some sets and not others: many sets of tags make sure some sum in the bad order.
    for group in range(16):
        p1, p2, n1, n2 = (MemKey.register(f"audit32_huge_{group}_{i}") for i in range(4))
        weights = {p1: 1.5e308, p2: 1.5e308, n1: -1.5e308, n2: -1.5e308}
        wm = WorkingMemory()
        wm.store("two large", [p1, p2])  # 3e308
        wm.store("two large, one negative", [p1, p2, n1])  # 1.5e308, newer
        wm.store("cancelled out", [p1, p2, n1, n2])  # exactly 0, newest
        assert wm.retrieve(weights) == "two large"
        assert wm.retrieve_all(weights) == ["two large"]
        nothing = WorkingMemory()
        nothing.store("cancelled out", [p1, p2, n1, n2])
        assert nothing.retrieve(weights) is None


def test_sums_still_tie_within_rounding() -> None:
    wm = WorkingMemory()
    wm.store("the door is locked", OBS)
    wm.store("find the key", [THOUGHT, MemKey.REFLECTION])
    assert wm.retrieve({OBS: 0.3, THOUGHT: 0.1, MemKey.REFLECTION: 0.2}) == "find the key"
    assert wm.retrieve_all({OBS: 0.3, THOUGHT: 0.1, MemKey.REFLECTION: 0.2}) == [
        "find the key",
        "the door is locked",
    ]
    # 0.1 + 0.2 - 0.3 is 0 for the caller, not a positive score.
    cancelled = WorkingMemory()
    cancelled.store("x", [OBS, THOUGHT, MemKey.REFLECTION])
    assert cancelled.retrieve({OBS: 0.1, THOUGHT: 0.2, MemKey.REFLECTION: -0.3}) is None


def test_weights_too_far_apart_to_compare_are_refused() -> None:
    wm = WorkingMemory()
    obs = wm.store("the door is locked", OBS)
    thought = wm.store("find the key", THOUGHT)
    weights = {OBS: 1e308, THOUGHT: 1e-308}
    with pytest.raises(ValidationError, match="too far apart"):
        wm.retrieve(weights)
    with pytest.raises(ValidationError, match="too far apart"):
        wm.retrieve_all(weights)
    with pytest.raises(ValidationError, match="too far apart"):
        wm.delete(weights)
    with pytest.raises(ValidationError, match="too far apart"):
        wm.add_tags(weights, MemKey.REFLECTION)
    with pytest.raises(ValidationError, match="too far apart"):
        _ = weights in wm
    assert list(wm) == [obs, thought]
    assert obs.tags == {OBS} and thought.tags == {THOUGHT}
