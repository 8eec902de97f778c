"""`EpisodexStore` answers item filters as LangGraph's own `InMemoryStore` does, on both engines.

The same items go into an `EpisodexStore` and a real `langgraph.store.memory.InMemoryStore`,
and the same filters run on both. Before:

- an empty nested filter, `{"a": {}}`, matched every item, also those without an `a`
  (InMemoryStore: the items whose `a` is an object; the engine cannot ask that, so it is now
  refused with `ValidationError`, like any other filter the engine cannot run).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

NS = ("alice", "facts")

VALUES: dict[str, Any] = {
    "obj": {"a": {"b": 1}},
    "empty_obj": {"a": {}},
    "str": {"a": "x"},
    "int": {"a": 1},
    "float": {"a": 1.0},
    "zero": {"a": 0},
    "five": {"a": 5},
    "null": {"a": None},
    "missing": {"z": 1},
    "list": {"a": ["x", "y"]},
    "one_list": {"a": ["x"]},
    "numbers": {"a": [1, 5]},
    "nested_list": {"a": [["x"]]},
    "objects": {"a": [{"b": 1}]},
    "obj_list": {"a": {"b": [1, 2]}},
    "big": {"a": 2**53},
    "big_plus_one": {"a": 2**53 + 1},
    "huge": {"a": 2**63 - 1},
    "huge_minus_one": {"a": 2**63 - 2},
    "negative_big": {"a": -(2**53) - 1},
    "spaced": {"first name": ["Ann"], "last name": "Lee"},
}


# Filters whose every item InMemoryStore can compare: the answers must be the same.
@pytest.fixture(params=["edge", "memory"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[EpisodexStore, BaseStore]]:
    if request.param == "edge":
        memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    else:
        memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        yield EpisodexStore(memory, agent_id="assistant"), InMemoryStore()
    finally:
        memory.close()


def fill(store: BaseStore, values: dict[str, Any]) -> None:
    store.batch([PutOp(NS, key, value) for key, value in values.items()])


def found(store: BaseStore, flt: dict[str, Any]) -> set[str]:
    return {item.key for item in store.search(("alice",), filter=flt, limit=100)}


def test_an_empty_nested_filter_is_refused(stores: tuple[EpisodexStore, BaseStore]) -> None:
    ours, _ = stores
    fill(ours, VALUES)
    for flt in ({"a": {}}, {"a": {"b": {}}}, {"z": 1, "a": {}}):
        with pytest.raises(ValidationError, match="empty"):
            ours.search(("alice",), filter=flt)
        with pytest.raises(ValidationError, match="empty"):
            ours.search(("alice",), query="x", filter=flt)
    # An empty filter at the top is no filter, as in InMemoryStore.
    assert found(ours, {}) == set(VALUES)
