"""One stored item that cannot be read back must not cost its user every other item.

An `ItemStore` point (the LangGraph store's items) written by another program or an older
release may hold a namespace that is no list of labels, a key or value of the wrong type or
missing, or a creation or update time no `datetime` holds. `search` (with and without a query)
and `list_namespaces` turned every hit into an item and raised a raw `TypeError`, `KeyError`,
`ValueError` or `OverflowError` at such a point (or returned a namespace of single letters),
so the user's items could no longer be searched or listed; `get` of it raised the same, and a
put over it (the way to correct it) failed reading its creation time. Such an item is now left
out of searches and listings, logged once with its point id, and a search still fills its
limit; `get` of it raises `EngineError` naming it; a put replaces it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EngineError, EpisodicMemory, ItemPut, ItemRef, ItemStore
from episodex.plan import Filter, Match, Point
from episodex.testing import HashEmbedder

NOTES = ("u", "notes")

#: How the bad item's payload is changed (None: the field is removed).
BAD: dict[str, tuple[str, Any]] = {
    "namespace-text": ("namespace", "u/notes"),
    "namespace-number": ("namespace", 5),
    "namespace-missing": ("namespace", None),
    "key-number": ("key", 5),
    "key-missing": ("key", None),
    "value-list": ("value", [1, 2]),
    "value-text": ("value", "a table"),
    "created-text": ("created_at", "yesterday"),
    "created-missing": ("created_at", None),
    "updated-huge": ("updated_at", 1e300),
    "updated-text": ("updated_at", "today"),
}


@pytest.fixture(params=["edge", "memory"])
def items(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ItemStore]:
    options: dict[str, Any] = (
        {"location": ":memory:"} if request.param == "memory" else {"path": tmp_path / "s"}
    )
    memory = EpisodicMemory(**options, embedder=HashEmbedder(), splade=False)
    yield ItemStore(memory.engine, memory.embedder)
    memory.close()


def _spoil(items: ItemStore, key: str, field: str, value: Any) -> str:
    """Rewrite the stored item `key` as another program might; its point id."""
    (hit,), _ = items.engine.scroll(items.collection, Filter(must=(Match("key", key),)), limit=1)
    payload = dict(hit.payload)
    if value is None:
        del payload[field]
    else:
        payload[field] = value
    text = "book a table for two"
    point = Point(
        id=hit.id,
        dense={"text": items.embedder.embed_documents([text])[0].tolist()},
        sparse={"bm25": items.bm25.document(text)},
        payload=payload,
    )
    items.engine.upsert(items.collection, [point])
    return hit.id


@pytest.mark.parametrize(("field", "value"), BAD.values(), ids=list(BAD))
def test_item_reads_leave_an_unreadable_item_out(
    items: ItemStore, field: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A key of its own: each point is reported once a process.
    good, bad = ItemRef("u", "a", NOTES, "good"), ItemRef("u", "a", NOTES, f"bad-{uuid.uuid4()}")
    items.write([ItemPut(good, {"v": 1}, text="book a table for two at the bistro")])
    # Stored after the good one and its text the query itself: first in both orders.
    items.write([ItemPut(bad, {"v": 2}, text="book a table for two")])
    point_id = _spoil(items, bad.key, field, value)
    caplog.set_level(logging.WARNING, logger="episodex")
    tenant: dict[str, Any] = {"user_id": "u", "agent_id": "a"}
    for _ in range(2):  # reported once, however often it is read
        for query in (None, "book a table for two"):
            found = items.search(**tenant, namespace_prefix=("u",), query=query, limit=1)
            assert [(i.namespace, i.key, i.value) for i in found] == [(NOTES, "good", {"v": 1})]
            found = items.search(**tenant, query=query, limit=5)
            assert [i.key for i in found] == ["good"]
            assert items.search(**tenant, query=query, limit=1, offset=1) == []
        assert items.list_namespaces(**tenant) == [NOTES]
        assert [i and i.key for i in items.get_many([good])] == ["good"]
    warnings = [r.getMessage() for r in caplog.records if point_id in r.getMessage()]
    assert len(warnings) == 1 and "item" in warnings[0] and "reads leave it out" in warnings[0]
    assert items.count(**tenant) == 2  # left out of reads, not deleted


@pytest.mark.parametrize(("field", "value"), BAD.values(), ids=list(BAD))
def test_an_unreadable_item_is_named_by_get_and_replaced_by_put(
    items: ItemStore, field: str, value: Any
) -> None:
    bad = ItemRef("u", "a", NOTES, "bad")
    items.write([ItemPut(bad, {"v": 2}, text="book a table for two")])
    point_id = _spoil(items, bad.key, field, value)
    with pytest.raises(EngineError, match=rf"item {point_id}.*cannot be read back"):
        items.get_many([bad])
    items.write([ItemPut(bad, {"v": 3}, text="book a table for three")])
    (item,) = items.get_many([bad])
    assert item is not None and item.value == {"v": 3}
    assert [i.key for i in items.search(user_id="u", agent_id="a")] == ["bad"]
