"""An `ItemStore.write` of puts and deletes ends in the new state or a typed error, never between.

The write used to upsert the puts, then delete the deleted items with one more engine call per
tenant. When a later call failed (or the process stopped between them), the puts were stored
and the deletes were not: a LangGraph batch that replaced one memory and removed another left
the new memory beside the one it meant to remove, and the caller got an error for a batch that
was half applied. Now the whole batch is one engine write, so it is applied whole or not at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    EpisodexError,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
)
from episodex.plan import Filter
from episodex.testing import FailingEngine, HashEmbedder

from ._support import BACKENDS, open_memory


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    with open_memory(str(request.param), tmp_path, embedder=HashEmbedder(), splade=False) as mem:
        yield mem


A = ItemRef("alice", "chef", ("alice", "food"), "diet")
B = ItemRef("alice", "chef", ("alice", "food"), "allergy")
C = ItemRef("alice", "chef", ("alice", "travel"), "seat")
D = ItemRef("bob", "chef", ("bob", "food"), "diet")  # another tenant, deleted in the same batch


def _state(items: ItemStore) -> dict[str, Any]:
    found = items.get_many([A, B, C, D])
    return {
        "values": [None if f is None else f.value for f in found],
        "alice": items.count(user_id="alice", agent_id="chef"),
        "bob": items.count(user_id="bob", agent_id="chef"),
        "listed": sorted(
            (i.key, i.value["v"]) for i in items.search(user_id="alice", agent_id="chef", limit=50)
        ),
        "found": sorted(
            i.key for i in items.search(user_id="alice", agent_id="chef", query="peanuts allergy")
        ),
    }


@pytest.mark.parametrize("method", ["upsert", "delete"])
def test_a_write_failing_part_way_is_whole_or_not_at_all(
    memory: EpisodicMemory, method: str
) -> None:
    items = ItemStore(memory.engine, memory.embedder)
    items.write(
        [
            ItemPut(A, {"v": 1}, text="vegetarian diet"),
            ItemPut(B, {"v": 1}, text="allergic to peanuts"),
            ItemPut(D, {"v": 1}, text="bob eats fish"),
        ]
    )
    old = _state(items)
    failing = FailingEngine(memory.engine)
    failing.fail_next(method)
    flaky = ItemStore(failing, memory.embedder)
    try:
        flaky.write(
            [ItemPut(A, {"v": 2}, text="vegan diet"), ItemPut(C, {"v": 2}, text="aisle")], [B, D]
        )
    except EpisodexError:
        assert _state(items) == old  # a typed error, and nothing of the batch applied
    else:
        new = _state(items)
        assert new["values"] == [{"v": 2}, None, {"v": 2}, None]
        assert (new["alice"], new["bob"]) == (2, 0)
        assert "allergy" not in new["found"]  # a deleted item is not ranked by a query
        assert new["listed"] == [("diet", 2), ("seat", 2)]
    assert failing.failures <= 1
    # Whatever happened, writing the batch again gives the new state, with nothing left over.
    items.write(
        [ItemPut(A, {"v": 2}, text="vegan diet"), ItemPut(C, {"v": 2}, text="aisle")], [B, D]
    )
    assert _state(items)["values"] == [{"v": 2}, None, {"v": 2}, None]
    assert memory.engine.count("items", Filter()) == 2
