"""A shallow copy of a working memory is a memory of its own: tagging one leaves the other.

`copy.copy(wm)` (a run handing its scratch memory to a sub-agent, a checkpoint before a risky
step) gave a new memory holding the same `MemoryEntry` objects, and `add_tags` and `rename`
change an entry in place: tagging or renaming in the copy changed what the original retrieved,
and the other way round. `copy.deepcopy` and pickling already gave entries of their own. Now a
shallow copy does too (same times, tags and contents, the contents themselves shared, as a
shallow copy does), so a change in one memory never shows in the other.
"""

from __future__ import annotations

import copy

from episodex import MemKey, WorkingMemory


def test_tagging_or_renaming_in_a_copy_leaves_the_original() -> None:
    wm = WorkingMemory()
    obs = wm.store("the door is locked", MemKey.OBSERVATION)
    thought = wm.store(["find the key"], MemKey.THOUGHT)
    fork = copy.copy(wm)
    assert [(e.content, e.tags, e.created_at) for e in fork] == [
        (e.content, e.tags, e.created_at) for e in wm
    ]
    assert fork.retrieve(MemKey.THOUGHT) is thought.content  # contents are shared, shallowly

    assert fork.add_tags(MemKey.OBSERVATION, MemKey.REFLECTION) == 1
    assert fork.rename(MemKey.THOUGHT, MemKey.SUBPROBLEM) == 1
    assert wm.retrieve(MemKey.REFLECTION) is None
    assert wm.retrieve(MemKey.SUBPROBLEM) is None
    assert obs.tags == {MemKey.OBSERVATION} and thought.tags == {MemKey.THOUGHT}

    # And the other way round.
    assert wm.add_tags(obs, MemKey.TASK_CATEGORY) == 1
    assert fork.retrieve(MemKey.TASK_CATEGORY) is None
    fork.store("second thought", MemKey.THOUGHT)
    assert (len(fork), len(wm)) == (3, 2)
