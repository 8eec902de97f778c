"""A weighted query that names one tag twice is refused, not silently half-used.

A working-memory tag has several spellings (`MemKey.OBSERVATION`, its value `"_text_obs"`,
the first name episodex gave it, `"observation"`), and a weights mapping can hold two of them:
`{"observation": 2.0, MemKey.OBSERVATION: -1.0}`. Each spelling is its own dict key, so the
later weight silently replaced the earlier one, and which weight counted depended on the order
the mapping was written in: the query asked for observations and got None. Now such a query
raises `ValidationError` naming both spellings, and nothing is read or changed.
"""

from __future__ import annotations

import pytest
from episodex import MemKey, ValidationError, WorkingMemory


def test_a_tag_weighed_twice_under_two_spellings_is_refused() -> None:
    wm = WorkingMemory()
    obs = wm.store("the door is locked", MemKey.OBSERVATION)
    thought = wm.store("find the key", MemKey.THOUGHT)
    for weights in (
        {"observation": 2.0, MemKey.OBSERVATION: -1.0},
        {MemKey.OBSERVATION: -1.0, "observation": 2.0},
        {"_text_obs": 1.0, "observation": 1.0},
        {MemKey.THOUGHT: 1.0, "search_query": 1.0, MemKey.GOOGLE_QUERY: 1.0},
    ):
        with pytest.raises(ValidationError, match="same tag"):
            wm.retrieve(weights)
        with pytest.raises(ValidationError, match="same tag"):
            wm.retrieve_all_entries(weights)
        with pytest.raises(ValidationError, match="same tag"):
            wm.delete(weights)
        with pytest.raises(ValidationError, match="same tag"):
            wm.add_tags(weights, MemKey.REFLECTION)
        with pytest.raises(ValidationError, match="same tag"):
            _ = weights in wm
    # Nothing was deleted or tagged by the refused calls.
    assert list(wm) == [obs, thought]
    assert obs.tags == {MemKey.OBSERVATION} and thought.tags == {MemKey.THOUGHT}
    # One spelling per tag is still fine, whichever spelling it is.
    assert wm.retrieve({"observation": 2.0, MemKey.THOUGHT: 1.0}) == "the door is locked"
    assert wm.retrieve({MemKey.OBSERVATION: -1.0, "_thought": 1.0}) == "find the key"
