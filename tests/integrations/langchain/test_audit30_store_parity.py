"""`EpisodexStore` answers item filters as LangGraph's own `InMemoryStore` does, on both engines.

The same items go into an `EpisodexStore` and a real `langgraph.store.memory.InMemoryStore`,
and the same filters run on both. Before:

- an empty nested filter, `{"a": {}}`, matched every item, also those without an `a`
  (InMemoryStore: the items whose `a` is an object; the engine cannot ask that, so it is now
  refused with `ValidationError`, like any other filter the engine cannot run);
- a filter compared the elements of a list field, not the field: `{"a": "x"}` (and `$eq`)
  matched `{"a": ["x", "y"]}`, `{"a": 1}` matched `{"a": [1, 5]}`, `{"a": {"b": 1}}` matched
  `{"a": {"b": [1, 2]}}`, `$ne` dropped every list holding the value, and `$gt`/`$lt` matched a
  list when any element was in range (InMemoryStore: a list is never equal to a scalar, and
  is no number);
- an integer beyond 2**53 was matched as the float it rounds to: `{"a": 2**53 + 1}` matched
  an item holding 2**53 (and `$ne` 2**53 dropped 2**53 + 1), although both are kept exactly.

Where episodex differs on purpose it still does, and is pinned here: booleans match only
booleans (InMemoryStore's `True == 1`), and a `None`, list or dict operand is refused with
`ValidationError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp
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
PARITY: list[dict[str, Any]] = [
    {"a": "x"},
    {"a": {"$eq": "x"}},
    {"a": {"$ne": "x"}},
    {"a": 1},
    {"a": 1.0},
    {"a": {"$eq": 1}},
    {"a": {"$ne": 1}},
    {"a": 0},
    {"a": {"$ne": 5}},
    {"a": {"b": 1}},
    {"a": {"b": {"$eq": 1}}},
    {"a": 2**53},
    {"a": 2**53 + 1},
    {"a": {"$eq": 2**53 + 1}},
    {"a": {"$ne": 2**53}},
    {"a": {"$ne": 2**53 + 1}},
    {"a": 2**63 - 1},
    {"a": {"$eq": 2**63 - 2}},
    {"a": {"$ne": 2**63 - 1}},
    {"a": -(2**53) - 1},
    {"a": -(2**53)},
    {"first name": "Ann"},
    {"first name": {"$ne": "Ann"}},
    {"last name": "Lee"},
    {"z": {"$ne": 1}},
    {},
]

# Range filters, compared on the items InMemoryStore can compare (numbers, and lists, where
# it raises `TypeError`: a list is no number, so episodex leaves it out).
RANGES: list[dict[str, Any]] = [
    {"$gt": 0},
    {"$gte": 1},
    {"$lt": 5},
    {"$lte": 1},
    {"$gte": 2, "$lt": 4},
    {"$gt": 0, "$ne": 5},
]


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


def test_filters_compare_a_list_field_as_a_whole(stores: tuple[EpisodexStore, BaseStore]) -> None:
    ours, reference = stores
    fill(ours, VALUES)
    fill(reference, VALUES)
    for flt in PARITY:
        if any(isinstance(v, int) and abs(v) >= 2**53 for v in _operands(flt)):
            continue  # the next test
        assert found(ours, flt) == found(reference, flt), flt
    # A query ranks only what the filter lets through.
    assert {h.key for h in ours.search(("alice",), query="x", filter={"a": "x"})} <= {"str"}


def test_ranges_never_match_a_list(stores: tuple[EpisodexStore, BaseStore]) -> None:
    ours, reference = stores
    numeric = {k: v for k, v in VALUES.items() if k in ("int", "float", "zero", "five")}
    fill(ours, {**numeric, "numbers": VALUES["numbers"], "three": {"a": [3]}})
    fill(reference, numeric)
    for ops in RANGES:
        answer = found(ours, {"a": ops})
        assert answer == found(reference, {"a": ops}), ops
    # InMemoryStore cannot compare a list with a number at all.
    reference.put(NS, "numbers", VALUES["numbers"])
    with pytest.raises(TypeError):
        found(reference, {"a": {"$gt": 0}})


def test_integers_beyond_two_to_the_53_match_exactly(
    stores: tuple[EpisodexStore, BaseStore],
) -> None:
    ours, reference = stores
    fill(ours, VALUES)
    fill(reference, VALUES)
    for flt in PARITY:
        if any(isinstance(v, int) and abs(v) >= 2**53 for v in _operands(flt)):
            assert found(ours, flt) == found(reference, flt), flt
    assert found(ours, {"a": 2**53 + 1}) == {"big_plus_one"}
    assert found(ours, {"a": {"$ne": 2**53}}) >= {"big_plus_one"}
    # No stored integer lies beyond 64 bits: such an operand is refused, not rounded.
    for flt in ({"a": 2**63}, {"a": {"$ne": -(2**63) - 1}}):
        with pytest.raises(ValidationError, match="64-bit"):
            ours.search(("alice",), filter=flt)


def test_intended_differences_are_kept(stores: tuple[EpisodexStore, BaseStore]) -> None:
    ours, reference = stores
    values = {"true": {"a": True}, "one": {"a": 1}, "zero": {"a": 0}, "false": {"a": False}}
    fill(ours, values)
    fill(reference, values)
    # Booleans match booleans only (InMemoryStore reads True as 1).
    assert found(reference, {"a": True}) == {"true", "one"}
    assert found(ours, {"a": True}) == {"true"}
    assert found(ours, {"a": 1}) == {"one"}
    assert found(ours, {"a": {"$ne": False}}) == {"true", "one", "zero"}
    for flt in ({"a": None}, {"a": [1]}, {"a": {"$eq": {"b": 1}}}):
        with pytest.raises(ValidationError, match="only a string, boolean or number"):
            ours.search(("alice",), filter=flt)


async def test_async_and_batched_searches_filter_alike(
    stores: tuple[EpisodexStore, BaseStore],
) -> None:
    ours, reference = stores
    fill(ours, VALUES)
    fill(reference, VALUES)
    ops = [SearchOp(("alice",), filter=flt, limit=100) for flt in PARITY] + [GetOp(NS, "list")]
    for store in (ours, reference):
        results = await store.abatch(ops)
        assert results == await asyncio.to_thread(store.batch, ops)
    assert searched(await ours.abatch(ops)) == searched(await reference.abatch(ops))


def searched(results: list[Any]) -> list[set[str]]:
    """The keys each search of a batch found."""
    return [{item.key for item in result} for result in results if isinstance(result, list)]


def _operands(flt: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for value in flt.values():
        if isinstance(value, dict):
            out.extend(_operands(value))  # pyright: ignore[reportUnknownArgumentType]
        else:
            out.append(value)
    return out
