"""`ItemStore`: namespaced JSON items, confined to one tenant, validated before any write."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    EmbedderMismatchError,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    StoredItem,
    ValidationError,
)
from episodex.testing import HashEmbedder


@pytest.fixture(params=["edge", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    if request.param == "edge":
        mem = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    else:
        mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    yield mem
    mem.close()


@pytest.fixture
def items(memory: EpisodicMemory) -> ItemStore:
    return ItemStore(memory.engine, memory.embedder)


def ref(user: str, *namespace: str, key: str = "k", agent: str = "bot") -> ItemRef:
    return ItemRef(user, agent, tuple(namespace), key)


def only(found: list[StoredItem | None]) -> StoredItem:
    [item] = found
    assert item is not None
    return item


def test_write_get_replace_delete(items: ItemStore) -> None:
    r = ref("alice", "alice", "notes")
    items.write([ItemPut(r, {"text": "first", "n": 1}, text="first")])
    first = only(items.get_many([r]))
    assert (first.namespace, first.key, first.value) == (
        ("alice", "notes"),
        "k",
        {"text": "first", "n": 1},
    )
    items.write([ItemPut(r, {"text": "second"}, text=None)])
    second = only(items.get_many([r]))
    assert second.value == {"text": "second"} and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    items.write(deletes=[r, ref("alice", "alice", "notes", key="never")])
    assert items.get_many([r]) == [None]
    assert items.count(user_id="alice", agent_id="bot") == 0


def test_the_last_put_of_a_reference_wins(items: ItemStore) -> None:
    r = ref("alice", "alice")
    items.write([ItemPut(r, {"v": 1}), ItemPut(r, {"v": 2})])
    assert only(items.get_many([r])).value == {"v": 2}
    assert items.count(user_id="alice", agent_id="bot") == 1


def test_no_call_reaches_another_tenant(items: ItemStore) -> None:
    # Bob writes an item under a namespace that names Alice: it is still Bob's.
    bob = ref("bob", "alice", "notes")
    items.write([ItemPut(bob, {"text": "bob's"}, text="secret plans")])
    alice = ref("alice", "alice", "notes")
    assert items.get_many([alice]) == [None]
    assert items.search(user_id="alice", agent_id="bot", query="secret plans") == []
    assert items.list_namespaces(user_id="alice", agent_id="bot") == []
    assert items.get_many([ref("bob", "alice", "notes", agent="other")]) == [None]
    items.write(deletes=[alice])  # Alice deleting "the same" item leaves Bob's alone
    assert items.forget(user_id="alice", agent_id="bot") == 0
    assert only(items.get_many([bob])).value == {"text": "bob's"}


@pytest.mark.parametrize(
    ("put", "message"),
    [
        (ItemPut(ItemRef("u", "bot", (), "k"), {"a": 1}), "at least one label"),
        (ItemPut(ItemRef("u", "bot", ("a", ""), "k"), {"a": 1}), "non-empty strings"),
        (ItemPut(ItemRef("u", "bot", ("a",) * 17, "k"), {"a": 1}), "at most 16"),
        (ItemPut(ItemRef("u", "bot", ("a",), ""), {"a": 1}), "key must be"),
        (ItemPut(ItemRef(" ", "bot", ("a",), "k"), {"a": 1}), "user_id"),
        (ItemPut(ItemRef("u", "bot", ("a",), "k"), ["not", "a", "dict"]), "JSON object"),  # type: ignore[arg-type]
        (ItemPut(ItemRef("u", "bot", ("a",), "k"), {"x": math.inf}), "infinity"),
        (ItemPut(ItemRef("u", "bot", ("a",), "k"), {"x": 1 << 70}), "64-bit"),
        (ItemPut(ItemRef("u", "bot", ("a",), "k"), {"x": "\ud800"}), "surrogate"),
        (ItemPut(ItemRef("u", "bot", ("a",), "k"), {"a": 1}, text="\ud800"), "surrogate"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    items: ItemStore, put: ItemPut, message: str
) -> None:
    good = ItemPut(ItemRef("u", "bot", ("a",), "good"), {"ok": True}, text="fine")
    with pytest.raises(ValidationError, match=message):
        items.write([good, put])
    assert items.get_many([good.ref]) == [None]
    assert items.count(user_id="u", agent_id="bot") == 0


def test_deeply_nested_value_is_refused(items: ItemStore) -> None:
    value: dict[str, Any] = {}
    inner = value
    for _ in range(40):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(ValidationError, match="nested deeper"):
        items.write([ItemPut(ref("u", "a"), value)])


def test_search_filters_prefix_and_pages(items: ItemStore) -> None:
    puts = [
        ItemPut(
            ref("u", "u", "a", key=f"k{i}"),
            {"i": i, "tag": "even" if i % 2 == 0 else "odd"},
            text=f"item number {i}",
        )
        for i in range(6)
    ]
    items.write(puts)
    newest = items.search(user_id="u", agent_id="bot", namespace_prefix=("u",), limit=3)
    assert len(newest) == 3 and all(i.score is None for i in newest)
    evens = items.search(user_id="u", agent_id="bot", filter={"tag": "even"}, limit=10)
    assert sorted(i.key for i in evens) == ["k0", "k2", "k4"]
    ranged = items.search(user_id="u", agent_id="bot", filter={"i": {"$gte": 2, "$lt": 4}})
    assert sorted(i.key for i in ranged) == ["k2", "k3"]
    ranked = items.search(user_id="u", agent_id="bot", query="number 3", limit=2)
    assert ranked[0].key == "k3" and ranked[0].score is not None
    assert items.search(user_id="u", agent_id="bot", namespace_prefix=("u", "b")) == []
    with pytest.raises(ValidationError, match="limit"):
        items.search(user_id="u", agent_id="bot", limit=-1)
    with pytest.raises(ValidationError, match="filter field"):
        items.search(user_id="u", agent_id="bot", filter={"a.b": 1})
    with pytest.raises(ValidationError, match="both 0"):
        items.search(user_id="u", agent_id="bot", query="x", dense_weight=0, bm25_weight=0)


def test_list_namespaces_and_forget_by_prefix(items: ItemStore) -> None:
    for namespace in (("u", "a"), ("u", "a", "x"), ("u", "b", "x"), ("u", "c")):
        items.write([ItemPut(ItemRef("u", "bot", namespace, "k"), {"v": 1})])
    listed = items.list_namespaces(user_id="u", agent_id="bot")
    assert listed == [("u", "a"), ("u", "a", "x"), ("u", "b", "x"), ("u", "c")]
    assert items.list_namespaces(user_id="u", agent_id="bot", suffix=("x",)) == [
        ("u", "a", "x"),
        ("u", "b", "x"),
    ]
    assert items.list_namespaces(user_id="u", agent_id="bot", prefix=("u", "*", "x")) == [
        ("u", "a", "x"),
        ("u", "b", "x"),
    ]
    assert items.list_namespaces(user_id="u", agent_id="bot", max_depth=1) == [("u",)]
    assert items.forget(user_id="u", agent_id="bot", namespace_prefix=("u", "a")) == 2
    assert items.list_namespaces(user_id="u", agent_id="bot") == [("u", "b", "x"), ("u", "c")]


def test_another_embedder_cannot_open_the_collection(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "s", embedder=HashEmbedder())
    try:
        ItemStore(memory.engine, memory.embedder)
        with pytest.raises(EmbedderMismatchError):
            ItemStore(memory.engine, HashEmbedder(dimension=32))
    finally:
        memory.close()
