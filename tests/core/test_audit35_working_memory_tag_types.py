"""A tag that is not a text is refused as such, not looked up as a tag nobody registered.

`WorkingMemory.store("y", b"_text_obs")` read the bytes as a list of numbers and raised
`UnknownTagError: unknown working-memory tag 95`, which names neither the argument nor what was
wrong, and told the caller to `MemKey.register(95)`, which fails too. A list element that is not
a text (`[b"_text_obs"]`, `[["_text_obs"]]`, `None`) got the same advice. Every entry point that
takes a tag, tags or weights now raises `ValidationError` saying a tag is a `MemKey` or a
`str`, and nothing is stored, tagged, renamed or deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from episodex import MemKey, UnknownTagError, ValidationError, WorkingMemory

NOT_TEXT: list[Any] = [
    b"_text_obs",
    bytearray(b"_text_obs"),
    memoryview(b"_text_obs"),
    [b"_text_obs"],
    [MemKey.THOUGHT, None],
    [["_text_obs"]],
    (MemKey.THOUGHT, 7),
]


@pytest.mark.parametrize("tags", NOT_TEXT, ids=repr)
def test_tags_that_are_not_texts_get_a_validation_error(tags: Any) -> None:
    wm = WorkingMemory()
    obs = wm.store("the door is locked", MemKey.OBSERVATION)
    thought = wm.store("find the key", MemKey.THOUGHT)
    calls: list[Callable[[], object]] = [
        lambda: wm.store("y", tags),
        lambda: wm.add_tags(obs, tags),
        lambda: wm.add_tags(MemKey.OBSERVATION, tags),
        lambda: wm.retrieve(tags),
        lambda: wm.retrieve_all(tags),
        lambda: wm.retrieve_entry(tags),
        lambda: wm.retrieve_all_entries(tags),
        lambda: wm.delete(tags),
        lambda: wm.add_tags(tags, MemKey.REFLECTION),
        lambda: tags in wm,
    ]
    for call in calls:
        with pytest.raises(ValidationError, match=r"a MemKey or a str") as caught:
            call()
        assert not isinstance(caught.value, UnknownTagError)
        assert "register" not in str(caught.value)
    assert list(wm) == [obs, thought]
    assert obs.tags == {MemKey.OBSERVATION} and thought.tags == {MemKey.THOUGHT}


@pytest.mark.parametrize("tag", [b"_text_obs", None, 95, ["_text_obs"]], ids=repr)
def test_a_single_tag_that_is_not_a_text_gets_a_validation_error(tag: Any) -> None:
    wm = WorkingMemory()
    obs = wm.store("the door is locked", MemKey.OBSERVATION)
    calls: list[Callable[[], object]] = [
        lambda: MemKey(tag),
        lambda: wm.rename(tag, MemKey.THOUGHT),
        lambda: wm.rename(MemKey.OBSERVATION, tag),
    ]
    if not isinstance(tag, list):  # a list cannot be a mapping key
        calls.append(lambda: wm.retrieve({tag: 1.0}))
    for call in calls:
        with pytest.raises(ValidationError, match=r"a MemKey or a str, got"):
            call()
    assert obs.tags == {MemKey.OBSERVATION}


def test_texts_are_still_looked_up_as_tags() -> None:
    wm = WorkingMemory()
    wm.store("y", "_text_obs")
    wm.store("z", ["observation", MemKey.THOUGHT])
    assert wm.retrieve_all("_text_obs") == ["z", "y"]
    with pytest.raises(UnknownTagError, match=r"MemKey\.register"):
        wm.store("y", ["never_registered"])
