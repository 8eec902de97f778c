"""Points ordered by a time that several share come back in one order on every engine.

`read_recent` asks the engine for points ordered by their end time. Qdrant Edge returned the
points sharing a time newest write first, qdrant-client `:memory:` oldest write first, so
`read_recent(3)` over task episodes that ended at the same second (a batch import, times
given to the second) gave different episodes on each engine, and a store's summary named a
different newest and oldest. Now every engine orders equal times by point id (descending is
the exact reverse of ascending), and points tied with the last one past the page are read
too, so the page is the same whatever the engine.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodex import Engine, Episode, EpisodicMemory, QdrantTaskStore, Task, open_engine
from episodex.plan import CollectionSpec, Filter, Match, Point
from episodex.testing import HashEmbedder

BACKENDS = ["edge", "memory"]
WHEN = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
# Written in this order, which is neither the ids' order nor its reverse.
ORDER = [5, 3, 9, 0, 7, 1, 8, 2, 6, 4]


def _id(i: int) -> str:
    return f"00000000-0000-4000-8000-0000000000{i:02d}"


def _open(backend: str, tmp_path: Path) -> Engine:
    if backend == "edge":
        return open_engine(path=str(tmp_path / "store"))
    return open_engine(location=":memory:")


def _ordered_pages(engine: Engine) -> dict[str, list[int]]:
    engine.ensure_collection(CollectionSpec(name="t", dense={"v": 2}, floats=("when",)))
    engine.upsert(
        "t",
        [
            Point(
                id=_id(i),
                dense={"v": [1.0, 0.5]},
                sparse={},
                payload={"n": i, "when": 1.0 if i < 6 else 2.0, "tag": "x"},
            )
            for i in ORDER
        ],
    )

    def numbers(
        limit: int, *, descending: bool, fields: bool | tuple[str, ...] = True
    ) -> list[int]:
        hits, nxt = engine.scroll(
            "t", Filter(), limit=limit, order_by="when", descending=descending, with_payload=fields
        )
        assert nxt is None
        return [int(h.id[-2:]) for h in hits]

    tagged, _ = engine.scroll(
        "t", Filter(must=(Match("tag", "x"),)), limit=4, order_by="when", with_payload=("n",)
    )
    assert all(set(h.payload) == {"n"} for h in tagged)  # the order key is not added
    return {
        "desc": numbers(10, descending=True),
        "asc": numbers(10, descending=False),
        "desc 3": numbers(3, descending=True),
        "desc 7": numbers(7, descending=True, fields=False),
        "asc 2": numbers(2, descending=False, fields=("n",)),
        "zero": numbers(0, descending=True),
    }


def test_engines_order_equal_times_alike(tmp_path: Path) -> None:
    pages: dict[str, dict[str, list[int]]] = {}
    for backend in BACKENDS:
        engine = _open(backend, tmp_path / backend)
        try:
            pages[backend] = _ordered_pages(engine)
        finally:
            engine.close()
    expected = {
        "desc": [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
        "asc": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        "desc 3": [9, 8, 7],
        "desc 7": [9, 8, 7, 6, 5, 4, 3],
        "asc 2": [0, 1],
        "zero": [],
    }
    assert pages == {"edge": expected, "memory": expected}


async def test_task_stores_read_the_same_recent_episodes_on_every_engine(tmp_path: Path) -> None:
    recent: dict[str, tuple[list[str], list[str], str]] = {}
    for backend in BACKENDS:
        store = (
            QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
            if backend == "edge"
            else QdrantTaskStore(location=":memory:", embedder=HashEmbedder())
        )
        try:
            for i in ORDER:
                task = Task(instruction=f"task {i}")
                await store.write(Episode(id_=f"e{i}", task=task, completed_at=WHEN))
            three = [e.id_ for e in await store.read_recent(3)]
            every = [e.id_ for e in await store.read_recent(10)]
            summary = (await store.summary()).split("\n", 1)[1]
            recent[backend] = (three, every, summary)
        finally:
            store.close()
    assert recent["edge"] == recent["memory"]
    three, every, _ = recent["edge"]
    assert three == every[:3] and sorted(every) == sorted(f"e{i}" for i in ORDER)


@pytest.mark.parametrize("limit", [2, 5])
async def test_episodic_memory_read_recent_is_the_same_on_every_engine(
    tmp_path: Path, limit: int
) -> None:
    found: dict[str, list[str]] = {}
    for backend in BACKENDS:
        mem = (
            EpisodicMemory(tmp_path / "episodes", embedder=HashEmbedder(), splade=False)
            if backend == "edge"
            else EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
        )
        try:
            await mem.memorize_many(
                [
                    {
                        "point_id": _id(i),
                        "user_id": "u",
                        "agent_id": "a",
                        "conversation_id": "c",
                        "short_summary": f"episode {i}",
                        "long_summary": f"episode {i} in full",
                        "timestamp_end": WHEN,
                    }
                    for i in ORDER
                ]
            )
            recent = await mem.read_recent(limit, user_id="u", agent_id="a")
            found[backend] = [r["point_id"] for r in recent]
        finally:
            mem.close()
    assert found["edge"] == found["memory"] == [_id(i) for i in range(9, 9 - limit, -1)]
