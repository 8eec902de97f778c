"""`ItemStore.forget` deletes the items it counted, and returns how many it deleted.

It counted the items, then deleted by filter: a write of another writer (another process on a
Qdrant server, which this process's write lock does not hold off) landing in between was
deleted uncounted, so the number returned was not what was forgotten, and an item put after
the forget began was lost. It now lists the ids and deletes those (`delete_counted`), as the
episode store does: the later item stays, and the count is what was deleted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from episodex import Engine, EpisodicMemory, ItemPut, ItemRef, ItemStore
from episodex.testing import HashEmbedder


class _WriteBeforeDelete:
    """The real engine; just before its first delete, another writer stores one item."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.other: ItemStore | None = None

    def delete(self, collection: str, flt: Any) -> None:
        other, self.other = self.other, None
        if other is not None:
            other.write([ItemPut(_ref("late"), {"text": "late"}, text="late")])
        self.inner.delete(collection, flt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _ref(key: str) -> ItemRef:
    return ItemRef("alice", "bot", ("alice", "notes"), key)


@pytest.fixture(params=["edge", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    if request.param == "edge":
        mem = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    else:
        mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    yield mem
    mem.close()


def test_an_item_written_during_a_forget_is_kept_and_the_count_is_what_was_deleted(
    memory: EpisodicMemory,
) -> None:
    wrapped = _WriteBeforeDelete(memory.engine)
    items = ItemStore(cast(Engine, wrapped), memory.embedder)
    items.write([ItemPut(_ref(f"k{i}"), {"text": f"note {i}"}, text=f"note {i}") for i in range(3)])
    wrapped.other = ItemStore(memory.engine, memory.embedder)
    assert items.forget(user_id="alice", agent_id="bot", namespace_prefix=("alice",)) == 3
    [late] = items.get_many([_ref("late")])
    assert late is not None and late.value == {"text": "late"}
    assert items.count(user_id="alice", agent_id="bot") == 1
