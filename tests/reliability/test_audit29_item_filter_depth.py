"""An item filter nested deeper than any stored value is a `ValidationError`, not a crash.

The filter language reads a nested dict as a nested field, one level of recursion per level:
a filter a few thousand levels deep (an API passing a client's JSON on) raised a raw
`RecursionError`. No stored value is nested deeper than `MAX_JSON_DEPTH` (32) levels, so a
deeper filter could match nothing; it is refused by name, and one as deep as a stored value
still finds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ItemPut, ItemRef, ItemStore, ValidationError
from episodex.testing import HashEmbedder

DEPTH = 32  # MAX_JSON_DEPTH: the deepest a stored value is nested


def nested(levels: int, leaf: Any) -> dict[str, Any]:
    """`{"a": {"a": ... {"a": leaf}}}` with `levels` dicts."""
    value: Any = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.fixture
def items(tmp_path: Path) -> Iterator[ItemStore]:
    memory = EpisodicMemory(tmp_path / "m", embedder=HashEmbedder(dimension=32), splade=False)
    try:
        store = ItemStore(memory.engine, memory.embedder)
        store.write([ItemPut(ItemRef("u", "a", ("notes",), "deep"), nested(DEPTH, "x"))])
        yield store
    finally:
        memory.close()


@pytest.mark.parametrize("levels", [DEPTH + 1, 5000])
def test_a_filter_deeper_than_any_value_is_a_validation_error(
    items: ItemStore, levels: int
) -> None:
    with pytest.raises(ValidationError, match="nested deeper than 32 levels"):
        items.search(user_id="u", agent_id="a", filter=nested(levels, "x"))


def test_a_filter_as_deep_as_a_stored_value_finds_it(items: ItemStore) -> None:
    found = items.search(user_id="u", agent_id="a", filter=nested(DEPTH, "x"))
    assert [item.key for item in found] == ["deep"]
    operator = nested(DEPTH - 1, {"a": {"$ne": "y"}})
    assert [item.key for item in items.search(user_id="u", agent_id="a", filter=operator)] == [
        "deep"
    ]
