"""Rebuilding vectors from stored texts carries a point that cannot be read back over as stored.

A store written by another program or an older release may hold an episode whose summary is
no string (a number, a list) or is missing, or whose times no `datetime` holds. Reads leave such
a point out (test_audit30_unreadable_points); the writes that re-read stored payloads to
rebuild their vectors did not:

- `reindex` (and `episodex reindex`) raised a raw `AttributeError` or `KeyError` midway, so a
  store holding one such point could never be re-indexed with another embedder (each resumed
  run failed on it again, its staging collection left behind);
- `memorize_many` (and `import_`) that failed after replacing such a point (the fix the read
  warning advises: memorize with its point_id) could not restore it, so its take-back stopped
  there and the episodes it had replaced kept their new texts ("taking them back failed too").

Both now carry the point over as stored: its payload untouched, its vectors made from whatever
text it has (a summary that is no string as its JSON text, a missing one as the other summary),
so nothing is lost and the point stays where the user can export, forget or replace it. A
re-index logs it once with its id. A creation time that is NaN (qdrant-client `:memory:` stores
it) no longer made the re-index embed the point twice.

An item put keeps the creation time of the item it replaces, read back from the store: one no
`datetime` holds (a string, a list, year 10000, 1e300, NaN) failed the put with a raw
`ValueError` or `TypeError`, or was carried on into the new item, whose every read then failed.
Such an item is now stored anew, created at the put's time.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from episodex import (
    Engine,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    StorageFullError,
    open_engine,
)
from episodex.plan import Filter, HasId, Point
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory

USER: dict[str, Any] = {"user_id": "u", "agent_id": "a"}
OLD = HashEmbedder(dimension=32, model_id="test/old")
NEW = HashEmbedder(dimension=48, model_id="test/new")
#: What another program or an older release may have stored (None: the field is missing).
BAD: dict[str, dict[str, Any]] = {
    "summary-number": {"short_summary_text": 5},
    "summary-list": {"long_summary_text": ["kettle", "refund"]},
    "summary-object": {"short_summary_text": {"text": "kettle"}},
    "summary-missing": {"long_summary_text": None},
    "summaries-missing": {"short_summary_text": None, "long_summary_text": None},
    "year-10000": {"timestamp_end": 253402300800.0},
    "time-text": {"timestamp_begin": "yesterday"},
    "time-missing": {"timestamp_end": None},
    "created-text": {"created_at": "now"},
    "created-missing": {"created_at": None},
}
#: Qdrant Edge refuses to store these; qdrant-client `:memory:` keeps them.
NOT_FINITE: dict[str, dict[str, Any]] = {
    "created-nan": {"created_at": float("nan")},
    "time-nan": {"timestamp_end": float("nan")},
}
CASES = [
    pytest.param(backend, fields, id=f"{backend}-{name}")
    for backend in BACKENDS
    for name, fields in {**BAD, **(NOT_FINITE if backend == "memory" else {})}.items()
]
GOOD = [
    {**USER, "short_summary": f"order {i} refund", "long_summary": f"order {i} was refunded",
     "conversation_id": f"c{i}"}
    for i in range(5)
]  # fmt: skip


def _store_bad(memory: EpisodicMemory, fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Store an episode, then overwrite its payload as another program might; id and payload."""
    (point_id,) = memory.store.memorize_many(
        [{**USER, "short_summary": "kettle refund", "long_summary": "kettle refund issued",
          "conversation_id": "bad"}]
    )  # fmt: skip
    (hit,), _ = memory.engine.scroll("episodes", Filter(must=(HasId((point_id,)),)), limit=1)
    payload = {k: v for k, v in {**hit.payload, **fields}.items() if v is not None}
    ((dense, sparse),) = memory.store.vectors([("kettle refund", "kettle refund issued")])
    memory.engine.upsert(
        "episodes", [Point(id=point_id, dense=dense, sparse=sparse, payload=payload)]
    )
    return point_id, payload


def _stored(memory: EpisodicMemory, point_id: str) -> str:
    """The stored payload of `point_id` as JSON (NaN compares equal to NaN this way)."""
    (hit,), _ = memory.engine.scroll("episodes", Filter(must=(HasId((point_id,)),)), limit=1)
    return json.dumps(hit.payload, sort_keys=True)


@pytest.fixture
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    with open_memory(request.param, tmp_path, embedder=OLD, splade=False) as mem:
        yield mem


@pytest.mark.parametrize(("memory", "fields"), CASES, indirect=["memory"])
async def test_a_reindex_carries_an_unreadable_episode_over_as_stored(
    memory: EpisodicMemory, fields: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    good = await memory.memorize_many(GOOD)
    bad, payload = _store_bad(memory, fields)
    caplog.set_level(logging.WARNING, logger="episodex")

    report = await memory.reindex(NEW, batch_size=2)

    assert (report.episodes, report.embedded, report.resumed, report.removed) == (6, 6, 0, 0)
    assert memory.embedder is NEW and memory.store.stored_embedder == "test/new"
    assert memory.engine.count("episodes", Filter()) == 6
    # Carried over as stored, neither dropped nor rewritten.
    assert _stored(memory, bad) == json.dumps(payload, sort_keys=True)
    readable = fields == {"created_at": None}  # an older payload may lack its creation time
    warnings = [r.getMessage() for r in caplog.records if bad in r.getMessage()]
    assert readable or any("a re-index carries it over as stored" in w for w in warnings)
    # The others are searched with the new embedder.
    found = await memory.recall(**USER, query="order 3 refund", previous_conversation_limit=5)
    assert found["previous_conversations"][0]["point_id"] == good[3]
    recent = sorted(i["point_id"] for i in await memory.read_recent(10, **USER))
    assert recent == sorted([*good, bad] if readable else good)
    # And the advised fix works on the re-indexed store: memorize with its point_id.
    await memory.memorize(
        **USER, short_summary="kettle refund", long_summary="kettle refund issued",
        conversation_id="bad", point_id=bad,
    )  # fmt: skip
    assert (await memory.get(bad, **USER))["short_summary_text"] == "kettle refund"


class _FailingUpserts:
    """A real engine whose chosen upserts (counted from 1) fail as a full disk makes them."""

    def __init__(self, inner: Engine, fail: Sequence[int]) -> None:
        self.inner = inner
        self.fail = set(fail)
        self.upserts = 0

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.upserts += 1
        if self.upserts in self.fail:
            raise StorageFullError("writing refused: the disk is full (injected)")
        self.inner.upsert(collection, points)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "fields",
    [{"short_summary_text": 5}, {"long_summary_text": None}, {"timestamp_end": 253402300800.0}],
    ids=["summary-number", "summary-missing", "year-10000"],
)
async def test_a_failed_memorize_many_restores_an_unreadable_episode_it_replaced(
    backend: str, fields: dict[str, Any], tmp_path: Path
) -> None:
    inner = open_engine(path=str(tmp_path / "s")) if backend == "edge" else None
    inner = inner or open_engine(location=":memory:")
    engine = _FailingUpserts(inner, fail=[])
    memory = EpisodicMemory(engine=cast(Engine, engine), embedder=OLD, splade=False)
    try:
        kept = await memory.memorize_many(GOOD[:2])
        bad, _ = _store_bad(memory, fields)
        before = {i: _stored(memory, i) for i in (*kept, bad)}
        # Batch 1 replaces the unreadable episode and a good one; batch 2 fails.
        engine.fail = {engine.upserts + 2}
        replacing = [
            {**USER, "short_summary": "kettle fixed", "long_summary": "kettle refund issued",
             "conversation_id": "bad", "point_id": bad},
            {**GOOD[0], "short_summary": "rewritten", "point_id": kept[0]},
            {**GOOD[2]}, {**GOOD[3]},
        ]  # fmt: skip
        with pytest.raises(StorageFullError, match="disk is full"):
            await memory.memorize_many(replacing, batch_size=2)
        # All or nothing: both replaced episodes are back as they were, nothing new is stored.
        assert {i: _stored(memory, i) for i in (*kept, bad)} == before
        assert memory.engine.count("episodes", Filter()) == 3
        found = await memory.recall(**USER, query="order 0 refund", previous_conversation_limit=1)
        assert found["previous_conversations"][0]["point_id"] == kept[0]
    finally:
        memory.close()
        inner.close()


#: Creation times an item store may hold from another program or an older release.
ITEM_TIMES: dict[str, Any] = {
    "text": "yesterday",
    "list": [1],
    "year-10000": 253402300800.0,
    "1e300": 1e300,
}
ITEM_CASES = [
    pytest.param(backend, value, id=f"{backend}-{name}")
    for backend in BACKENDS
    for name, value in {
        **ITEM_TIMES,
        **({"nan": float("nan")} if backend == "memory" else {}),
    }.items()
]


@pytest.mark.parametrize(("backend", "created_at"), ITEM_CASES)
def test_putting_an_item_over_one_with_an_unreadable_creation_time_mends_it(
    backend: str, created_at: Any, tmp_path: Path
) -> None:
    # A put keeps the stored creation time of the item it replaces; one no datetime holds
    # failed every put of that item (a raw ValueError, TypeError), or was carried on into it.
    engine = open_engine(path=str(tmp_path / "s")) if backend == "edge" else None
    engine = engine or open_engine(location=":memory:")
    try:
        items = ItemStore(engine, OLD)
        ref = ItemRef("u", "a", ("prefs",), "drink")
        items.write([ItemPut(ref, {"drink": "tea"})])
        (hit,), _ = engine.scroll(items.collection, Filter(), limit=1)
        payload = {**hit.payload, "created_at": created_at}
        engine.upsert(items.collection, [Point(id=hit.id, dense={}, sparse={}, payload=payload)])

        before = time.time()
        items.write([ItemPut(ref, {"drink": "coffee"})])
        (item,) = items.get_many([ref])
        assert item is not None and item.value == {"drink": "coffee"}
        # Stored anew: its creation time is the put's, as for a new item.
        assert item.created_at.timestamp() >= before - 1
        assert item.created_at == item.updated_at
    finally:
        engine.close()
