"""What a write of several engine writes leaves in its collection until it is done.

One engine write is atomic; `EpisodeStore.write_all` makes a call of several all or nothing by
taking back its earlier writes when a later one fails. A process killed between two writes
takes nothing back: the next open found the first batches of a call that never returned, and
the caller's retry stored them twice. So each write of such a call carries, in the same engine
write, a record of what it did: the ids it added, and the stored payload of each episode it
replaced. The call deletes its records (one engine write) before it returns; opening the store
finds the records of a call that never finished and takes it back.

A record is a point without vectors or tenant, so no tenant's filter, search or listing reaches
it. Records have fixed ids (the Nth write of a call uses the Nth id), found by id on open
without scanning the collection. That needs one writer at a time: the write lock serialises the
writers of one process, and the embedded store admits one process. A Qdrant server's writers in
several processes are not serialised, and one of them cannot tell another's call under way from
a killed one, so there a call is not recorded (`records_writes`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from episodex._engines.base import Engine
from episodex._engines.collection import delete_checked
from episodex._engines.plan import Filter, HasId, Hit, Point, SparseVec
from episodex._episodes.model import stored_texts

__all__ = [
    "PENDING",
    "RESERVED",
    "Pending",
    "clear",
    "find",
    "forget",
    "record",
    "records_writes",
    "reserved",
    "take_back",
    "taken",
]

#: The payload key marking a record of an unfinished write.
PENDING = "pending_write"
_NAMESPACE = uuid.UUID("0b6f4c0e-94d1-4c1e-a7f4-3c2b7e5d9a61")
_PAGE = 1024
#: The vectors of episodes made again from their stored texts, for restoring replaced ones.
Vectors = Callable[
    [Sequence[tuple[str, str]]], list[tuple[dict[str, list[float]], dict[str, SparseVec]]]
]


def records_writes(engine: Engine) -> bool:
    """Whether writes on `engine` are recorded: only where this process is their only writer."""
    return getattr(engine, "kind", None) in ("edge", "memory")


def _record_id(n: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"pending-write/{n}"))


#: How many record ids an episode may never take (a call of more writes checks the rest). The
#: set is built once per process, when an id of their kind (a version-5 UUID, as the LangGraph
#: middleware's run ids are) is first written: 4,096 ids take about 20 ms, 65,536 took 0.3 s.
RESERVED = 1 << 12


@functools.cache
def _reserved() -> frozenset[str]:
    return frozenset(_record_id(n) for n in range(RESERVED))


def reserved(point_id: str) -> bool:
    """Whether `point_id` (canonical) is the id of a record.

    An episode stored under it would be overwritten, then deleted, by the next call of
    several writes, whoever's it is.
    """
    return uuid.UUID(point_id).version == 5 and point_id in _reserved()


def taken(engine: Engine, collection: str, writes: int) -> list[str]:
    """The record ids beyond `RESERVED` of a call of `writes` writes that hold an episode."""
    ids = [_record_id(n) for n in range(RESERVED, writes)]
    found: list[str] = []
    for start in range(0, len(ids), _PAGE):
        chunk = tuple(ids[start : start + _PAGE])
        hits, _ = engine.scroll(collection, Filter(must=(HasId(chunk),)), limit=len(chunk))
        found.extend(h.id for h in hits if h.payload.get(PENDING) is not True)
    return found


def record(
    write_id: str,
    n: int,
    writes: int,
    written_at: float,
    points: Sequence[Point],
    replaced: Mapping[str, Hit],
) -> Point:
    """The record written with the `n`th of a call's `writes` engine writes, holding `points`.

    `written_at` is the `created_at` of every point the call writes: a point holding another
    is not this call's any more, and taking back leaves it alone.
    """
    return Point(
        id=_record_id(n),
        dense={},
        sparse={},
        payload={
            PENDING: True,
            "write_id": write_id,
            "writes": writes,
            "written_at": written_at,
            "new": [p.id for p in points if p.id not in replaced],
            "replaced": [
                {"id": p.id, "payload": dict(replaced[p.id].payload)}
                for p in points
                if p.id in replaced
            ],
        },
    )


@dataclass
class Pending:
    """The records of one unfinished call."""

    record_ids: tuple[str, ...]
    written_at: float
    new: list[str]
    replaced: dict[str, dict[str, Any]]


def find(engine: Engine, collection: str) -> Pending | None:
    """The records an unfinished call left in `collection`, or None."""
    first, _ = engine.scroll(collection, Filter(must=(HasId((_record_id(0),)),)), limit=1)
    if not first or first[0].payload.get(PENDING) is not True:
        return None
    head = first[0].payload
    ids = tuple(_record_id(n) for n in range(int(head.get("writes", 1))))
    pending = Pending(ids, float(head["written_at"]), [], {})
    for start in range(0, len(ids), _PAGE):
        chunk = ids[start : start + _PAGE]
        hits, _ = engine.scroll(collection, Filter(must=(HasId(chunk),)), limit=len(chunk))
        for hit in hits:
            # A record a finished call failed to delete belongs to another call: left alone.
            if hit.payload.get("write_id") != head["write_id"]:
                continue
            pending.new.extend(hit.payload.get("new", []))
            pending.replaced.update(
                (r["id"], r["payload"]) for r in hit.payload.get("replaced", [])
            )
    return pending


def forget(
    engine: Engine, collection: str, forgotten: Callable[[str, Mapping[str, Any]], bool]
) -> None:
    """Delete from the records an unfinished call left the episodes `forgotten` names.

    A record keeps the stored payload of each episode its call replaced until the call is
    taken back; a forget must not leave those copies on disk, nor let taking back write a
    forgotten episode again. Its id moves to the record's new ones: taking back deletes what
    the call wrote there (the episode did not exist before, as far as anyone may know now).
    `forgotten` is asked with each copy's point id and payload.
    """
    first, _ = engine.scroll(collection, Filter(must=(HasId((_record_id(0),)),)), limit=1)
    if not first or first[0].payload.get(PENDING) is not True:
        return
    ids = tuple(_record_id(n) for n in range(int(first[0].payload.get("writes", 1))))
    for start in range(0, len(ids), _PAGE):
        chunk = ids[start : start + _PAGE]
        hits, _ = engine.scroll(collection, Filter(must=(HasId(chunk),)), limit=len(chunk))
        changed: list[Point] = []
        for hit in hits:
            if hit.payload.get(PENDING) is not True:
                continue
            replaced = list(hit.payload.get("replaced", []))
            gone = [r["id"] for r in replaced if forgotten(r["id"], r["payload"])]
            if gone:
                payload = dict(hit.payload)
                payload["replaced"] = [r for r in replaced if r["id"] not in gone]
                payload["new"] = [*payload.get("new", []), *gone]
                changed.append(Point(id=hit.id, dense={}, sparse={}, payload=payload))
        if changed:
            engine.upsert(collection, changed)


def take_back(engine: Engine, collection: str, pending: Pending, vectors: Vectors) -> None:
    """Undo an unfinished call: delete what it added, restore what it replaced, then its records.

    Only points the call wrote (their `created_at` is its `written_at`) are touched, so doing it
    twice (a kill while taking back) or after the call's own taking back changes nothing more.
    """
    ids = tuple(dict.fromkeys([*pending.new, *pending.replaced]))
    mine: list[str] = []
    for start in range(0, len(ids), _PAGE):
        chunk = ids[start : start + _PAGE]
        hits, _ = engine.scroll(
            collection, Filter(must=(HasId(chunk),)), limit=len(chunk), with_payload=("created_at",)
        )
        mine.extend(h.id for h in hits if h.payload.get("created_at") == pending.written_at)
    gone = [i for i in mine if i not in pending.replaced]
    for start in range(0, len(gone), _PAGE):
        delete_checked(
            engine, collection, Filter(must=(HasId(tuple(gone[start : start + _PAGE])),))
        )
    back = [Hit(i, 0.0, pending.replaced[i]) for i in mine if i in pending.replaced]
    restore(engine, collection, back, vectors)
    clear(engine, collection, len(pending.record_ids))


def restore(engine: Engine, collection: str, hits: Sequence[Hit], vectors: Vectors) -> None:
    """Write stored episodes back: their payload, with vectors made again from their texts."""
    for start in range(0, len(hits), 256):
        chunk = hits[start : start + 256]
        made = vectors([stored_texts(h.payload) for h in chunk])
        engine.upsert(
            collection,
            [
                Point(id=h.id, dense=dense, sparse=sparse, payload=dict(h.payload))
                for h, (dense, sparse) in zip(chunk, made, strict=True)
            ],
        )


def clear(engine: Engine, collection: str, writes: int) -> None:
    """Delete the records of a call of `writes` engine writes (one engine write)."""
    ids = tuple(_record_id(n) for n in range(writes))
    delete_checked(engine, collection, Filter(must=(HasId(ids),)))
