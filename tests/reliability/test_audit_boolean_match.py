"""A filter on a boolean matches the same points on Qdrant Edge and qdrant-client `:memory:`.

The Qdrant Edge binding reads a Python `True` given to its `MatchValue` as the integer 1 (a
bool is an int in Python). So on the embedded engine, the default, `Match(key, True)` found
the points holding the number 1 and never those holding `true`: an item store searched with
`filter={"done": True}` returned the items with `done: 1`, while `:memory:` returned those
with `done: true`. A plan `Filter` given to `QdrantTaskStore.search` did the same. Both engines
now match a boolean against booleans only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    Engine,
    Episode,
    ItemPut,
    ItemRef,
    ItemStore,
    QdrantTaskStore,
    Task,
    open_engine,
)
from episodex.plan import CollectionSpec, Filter, Match, Point
from episodex.testing import HashEmbedder

BACKENDS = ["edge", "memory"]
#: Values that equal True or False in Python, and the JSON types they are stored as.
VALUES: list[object] = [True, 1, False, 0, "true", 1.0]


def _open(backend: str, tmp_path: Path) -> Engine:
    if backend == "edge":
        return open_engine(path=str(tmp_path / "store"))
    return open_engine(location=":memory:")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_engine_matches_booleans_against_booleans_only(backend: str, tmp_path: Path) -> None:
    engine = _open(backend, tmp_path)
    try:
        engine.ensure_collection(CollectionSpec(name="flags", dense={"v": 2}))
        engine.upsert(
            "flags",
            [
                Point(
                    id=f"00000000-0000-4000-8000-0000000000{i:02d}",
                    dense={"v": [1.0, 0.5]},
                    sparse={},
                    payload={"n": i, "flag": value},
                )
                for i, value in enumerate(VALUES)
            ],
        )

        def numbers(flt: Filter) -> list[int]:
            hits, _ = engine.scroll("flags", flt, limit=20)
            return sorted(h.payload["n"] for h in hits)

        assert numbers(Filter(must=(Match("flag", True),))) == [0]
        assert numbers(Filter(must=(Match("flag", False),))) == [2]
        assert numbers(Filter(must=(Match("flag", 1),))) == [1]
        assert numbers(Filter(must_not=(Match("flag", True),))) == [1, 2, 3, 4, 5]
        assert engine.count("flags", Filter(must=(Match("flag", True),))) == 1
    finally:
        engine.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_item_store_filters_on_a_boolean_alike(backend: str, tmp_path: Path) -> None:
    engine = _open(backend, tmp_path)
    try:
        items = ItemStore(engine, HashEmbedder())
        items.write(
            [
                ItemPut(ItemRef("u", "bot", ("todo",), f"k{i}"), {"done": value})
                for i, value in enumerate(VALUES)
            ]
        )
        for wanted, key in ((True, "k0"), (False, "k2")):
            found = items.search(user_id="u", agent_id="bot", filter={"done": wanted})
            assert [item.key for item in found] == [key]
    finally:
        engine.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_task_store_plan_filter_on_a_boolean_alike(backend: str, tmp_path: Path) -> None:
    store = (
        QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
        if backend == "edge"
        else QdrantTaskStore(location=":memory:", embedder=HashEmbedder())
    )
    try:
        for i, value in enumerate(VALUES):
            task = Task(instruction="water the plants")
            await store.write(Episode(id_=f"e{i}", task=task, metadata={"flag": value}))
        found = await store.search(
            "water the plants", k=10, filter=Filter(must=(Match("metadata.flag", True),))
        )
        assert [e.id_ for e in found] == ["e0"]
    finally:
        store.close()
