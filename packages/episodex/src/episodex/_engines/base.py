"""The store protocol every vector backend implements, and how a memory picks one.

Two backends implement `Engine`: `EdgeEngine` (Qdrant Edge, in process, one folder per
collection) and `QdrantClientEngine` (qdrant-client: a server, a cluster, or `:memory:`).
Both render the same `_plan` objects. Engines are synchronous and thread-safe; the memory
classes call them from worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from episodex._common.errors import ConfigurationError, ValidationError
from episodex._engines.plan import (
    CollectionSpec,
    Filter,
    Fused,
    Hit,
    Point,
    Range,
    Search,
    SparseVec,
)

__all__ = [
    "FOLDER_MAP",
    "MAX_COUNT",
    "STAGING_DIGITS",
    "STAGING_MARK",
    "STAGING_OF",
    "Engine",
    "ReindexableEngine",
    "StagedEngine",
    "StreamRanks",
    "answer_batch",
    "bad_page_token",
    "cap_count",
    "check_collection_name",
    "explain_fused",
    "is_staging_copy",
    "is_staging_name",
    "ordered_page",
    "refuse_bad_vectors",
    "searchable",
    "stream_searches",
]

#: Between a collection's name and a digest: the name of the collection a re-index fills.
STAGING_MARK = "_reindex_"
#: How many hex digits of that digest the name keeps.
STAGING_DIGITS = 12


def is_staging_name(name: str, collection: str) -> bool:
    """Whether `name` is the form of a staging collection that a re-index of `collection` fills.

    Only the exact form: another collection may well start with `<collection>_reindex_`.
    """
    digest = name.removeprefix(f"{collection}{STAGING_MARK}")
    return (
        digest != name
        and len(digest) == STAGING_DIGITS
        and all(c in "0123456789abcdef" for c in digest)
    )


#: The manifest entry a re-index writes in the staging collection it makes: the collection it
#: is a copy of. A user's own collection may well have the staging form of another's name.
STAGING_OF = "staging_of"


def is_staging_copy(name: str, collection: str, manifest: Mapping[str, Any], kind: object) -> bool:
    """Whether `name` (its manifest `manifest`) is a copy a re-index of `collection` made.

    Of the staging form and holding records of `kind`. Every collection made since the mark
    exists records `STAGING_OF` (the collection it copies, or "" for none), so only a marked
    copy is dropped when abandoned or reached by a forget: a collection merely named like one
    (the user's own `episodes_reindex_0123456789ab`) is another collection. One made before
    has no mark: it is taken for a copy by its name and kind, as it was then, so the copies
    of re-indexes killed under an older release are still forgotten and dropped.
    """
    if not is_staging_name(name, collection) or manifest.get("kind") != kind:
        return False
    return manifest.get(STAGING_OF, collection) == collection


#: The embedded store's file naming the shard folder that serves each collection (`edge.py`).
FOLDER_MAP = "episodex-collections.json"


def check_collection_name(name: object, *, embedded: bool) -> str:
    """Return `name` if it can name a collection; raise `ConfigurationError` if not.

    The embedded engine makes a folder of each collection inside the store folder: a name
    holding a path separator, `.` or `..` made it elsewhere (an absolute path or `../x` outside
    the folder the store's lock covers), and a name of the store's own files (`embedded`: its
    folder map, the lock and temporary files, all starting with `.` but the map) took their
    place, leaving the store unopenable. The first rules hold on every engine (a Qdrant server
    refuses separators and control characters itself, as an outage-like `EngineError`), so a
    store keeps the names an embedded copy of it can take.
    """
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"collection must be a non-empty string, got {name!r}")
    problem = None
    if "/" in name or "\\" in name:
        problem = "holds a path separator"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "holds a control character"
    elif name in (".", ".."):
        problem = "names a folder, not a collection"
    elif embedded and (name.startswith(".") or name == FOLDER_MAP):
        problem = "is reserved for the embedded store's own files (a name starting with '.')"
    if problem:
        raise ConfigurationError(
            f"collection name {name!r} {problem}; give a plain name such as 'my_tasks'"
        )
    return name


#: The largest count (a limit, an RRF constant) an engine is given. Counts are checked for a
#: minimum only, any larger one meaning "all of them"; the engines' 64-bit fields would refuse
#: one of 2**64 or more (the embedded binding with a raw OverflowError), so it is capped, far
#: beyond any number of points a collection holds.
MAX_COUNT = 2**32


def bad_page_token(offset: object, form: str) -> ValidationError:
    """The error for a scroll `offset` that is no page token this engine returns (`form`).

    Each engine reads a token its own way: another engine's token, or any other string, raised
    a raw `ValueError` on Qdrant Edge and was read by qdrant-client as a place to start from
    (or as the end, so a caller paging through stopped early).
    """
    return ValidationError(
        f"offset must be a page token this engine's scroll returned ({form}) or None, got "
        f"{offset!r}; a token of another kind of engine cannot be used"
    )


def cap_count(n: int) -> int:
    """`n`, or `MAX_COUNT` if it is larger."""
    return min(n, MAX_COUNT)


R = TypeVar("R", Search, Fused, Search | Fused)
A = TypeVar("A")


def searchable(request: R) -> R | None:
    """The request as an engine is given it, or None if it can find nothing.

    A limit below 1 finds nothing, as in a scroll: a search or fused request of limit 0 gave
    no hits on Qdrant Edge but every point (or an `EngineError`) on qdrant-client, and -1 a
    raw OverflowError on Qdrant Edge. A fused stream below 1 finds nothing, so it is left
    out of the fusion (it would add nothing to any score); without a stream left, nothing.
    """
    if request.limit <= 0:
        return None
    if isinstance(request, Search) or all(s.limit > 0 for s in request.streams):
        return request
    kept = [i for i, s in enumerate(request.streams) if s.limit > 0]
    if not kept:
        return None
    return replace(
        request,
        streams=tuple(request.streams[i] for i in kept),
        weights=tuple(request.weights[i] for i in kept if i < len(request.weights)),
    )


def answer_batch(
    requests: Sequence[R], run: Callable[[list[R]], list[list[A]]], hit_of: Callable[[A], Hit]
) -> list[list[A]]:
    """`run` over the requests that can find something (`searchable`); none for the rest.

    `run` is called even with no request left, so a closed engine still refuses. Every
    request's hits of equal score come in point-id order (`_tie_ordered`); `hit_of` is the hit
    of one of `run`'s answers.
    """
    given = [searchable(r) for r in requests]
    asked = [r for r in given if r is not None]
    answers = iter(_tie_ordered(asked, run, hit_of))
    return [[] if r is None else next(answers) for r in given]


def _tie_ordered(
    asked: list[R], run: Callable[[list[R]], list[list[A]]], hit_of: Callable[[A], Hit]
) -> list[list[A]]:
    """`run`'s answers, each request's hits of equal score in point-id order.

    Each backend orders hits of one score its own way (Qdrant Edge by where the points lie in
    its segments, so by the order they were written; qdrant-client newest first), and equal
    scores are common: two equally weighted streams ranking two episodes the other way round,
    or one stream over two attempts at a task with the same indexed text. A recall whose
    limit cut through such a tie gave one episode on one store and another elsewhere (or for
    another limit). So a request is asked for one hit more, and for more again while the hits
    tied with the last one it keeps reach past what was read; the tie is then put in id order
    and cut.
    """
    limits = [r.limit + 1 for r in asked]
    answers = run([_limited(r, n) for r, n in zip(asked, limits, strict=True)])

    def tie_past_read(i: int) -> bool:
        found, limit = answers[i], asked[i].limit
        return (
            len(found) >= limits[i] > limit
            and hit_of(found[limit - 1]).score == hit_of(found[-1]).score
        )

    again = [i for i in range(len(asked)) if tie_past_read(i)]
    while again:
        for i in again:
            limits[i] *= 2
        for i, found in zip(
            again, run([_limited(asked[i], limits[i]) for i in again]), strict=True
        ):
            answers[i] = found
        again = [i for i in again if tie_past_read(i)]
    return [
        sorted(found, key=lambda a: (-hit_of(a).score, hit_of(a).id))[: r.limit]
        for r, found in zip(asked, answers, strict=True)
    ]


def _limited(request: R, limit: int) -> R:
    return request if request.limit == limit else replace(request, limit=limit)


#: For one hit: stream name -> (rank from 1, that stream's score).
StreamRanks = dict[str, tuple[int, float]]

# Both engines keep vectors in float32: a larger number would become infinity there.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _finite(values: list[float] | SparseVec) -> bool:
    numbers = values.values if isinstance(values, SparseVec) else values
    # NaN fails every comparison, so one test covers NaN, infinity and float32 overflow.
    return bool(np.all(np.abs(np.asarray(numbers, dtype=np.float64)) <= _FLOAT32_MAX))


# Sparse vector indices are unsigned 32-bit dimensions in both engines.
_SPARSE_INDICES = 2**32


def _sparse_fault(vec: SparseVec) -> str | None:
    """What makes `vec` a sparse vector no engine can hold, or None."""
    if len(vec.indices) != len(vec.values):
        return f"has {len(vec.indices)} indices for {len(vec.values)} values"
    if len(vec.indices) == 0:
        return None
    indices = np.asarray(vec.indices)
    # A float, a bool or an integer past 64 bits gives an array of another kind.
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        return "has an index that is not an integer"
    if int(indices.min()) < 0 or int(indices.max()) >= _SPARSE_INDICES:
        return "has an index outside 0 to 2**32 - 1"
    if np.unique(indices).size != indices.size:
        return "repeats an index"
    return None


def refuse_bad_vectors(items: Sequence[Point] | Sequence[Search | Fused]) -> None:
    """Raise `ValidationError` for a point or query whose vector no engine can take.

    A vector holding a non-finite number, or a malformed sparse vector (indices and values of
    different lengths, a repeated, negative, fractional or beyond-32-bit index). Every engine
    calls it before writing or searching: left to the backends, Qdrant Edge stored a NaN vector
    silently (the point could never be found again) while qdrant-client refused NaN but stored
    infinity, whose NaN scores then ranked first in every search; and Qdrant Edge logged a
    sparse vector with more indices than values, then panicked applying it, at every open too.
    """
    seen: set[int] = set()  # a recall hands one query vector to several streams
    for item in items:
        if isinstance(item, Point):
            named = [*item.dense.items(), *item.sparse.items()]
            where = f"point {item.id!r}"
        else:
            streams = item.streams if isinstance(item, Fused) else (item.stream,)
            named = [(s.using, s.vector) for s in streams]
            where = "the query"
        for name, vector in named:
            if id(vector) in seen:
                continue
            seen.add(id(vector))
            fault = _sparse_fault(vector) if isinstance(vector, SparseVec) else None
            if fault is not None:
                raise ValidationError(
                    f"{where}: its {name!r} sparse vector {fault}; nothing was written or "
                    "searched. Check the encoder that made it"
                )
            if not _finite(vector):
                raise ValidationError(
                    f"{where}: its {name!r} vector is not finite (it holds NaN, infinity or a "
                    "number beyond float32); nothing was written or searched. Check the "
                    "embedder that made it"
                )


@runtime_checkable
class Engine(Protocol):
    """A vector engine holding named collections of points with dense and sparse vectors."""

    @property
    def kind(self) -> str:
        """`edge`, `memory` (qdrant-client local mode) or `server`."""
        ...

    def ensure_collection(self, spec: CollectionSpec) -> Mapping[str, Any]:
        """Create the collection if it is missing; return the metadata it was created with."""
        ...

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace points, all or nothing."""
        ...

    def delete(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt` (there is no unfiltered delete)."""
        ...

    def query(self, collection: str, requests: Sequence[Search | Fused]) -> list[list[Hit]]:
        """Run searches as one batch; one list of hits per request, best first."""
        ...

    def query_explained(
        self, collection: str, requests: Sequence[Fused]
    ) -> list[list[tuple[Hit, StreamRanks]]]:
        """Run fused searches and, in the same batch, each of their streams alone.

        Returns, for each request, its fused hits (best first), each with the rank (from 1)
        and score that every stream that found it gave it.
        """
        ...

    def scroll(
        self,
        collection: str,
        flt: Filter,
        *,
        limit: int,
        order_by: str | None = None,
        descending: bool = True,
        with_payload: bool | Sequence[str] = True,
        offset: str | None = None,
    ) -> tuple[list[Hit], str | None]:
        """Page through matching points; ordered by a float payload key when `order_by` is set.

        Returns the page and the offset of the next page (None at the end, and always None when
        ordering, where a page is the whole answer).
        """
        ...

    def count(self, collection: str, flt: Filter) -> int:
        """Count matching points exactly."""
        ...

    def optimize(self) -> None:
        """Build indexes and merge segments now (a no-op where the engine does it itself)."""
        ...

    def close(self) -> None:
        """Flush and release the engine; idempotent."""
        ...


@runtime_checkable
class ReindexableEngine(Engine, Protocol):
    """An engine that can re-index: serve a collection's name from another collection."""

    def generation(self, collection: str) -> str:
        """The collection that serves `collection` now (changes with each switch)."""
        ...

    def drop_collection(self, collection: str) -> None:
        """Delete a collection no name is served from (an abandoned staging one)."""
        ...

    def switch_collection(self, collection: str, staging: str) -> None:
        """Serve `collection` from `staging` from now on, atomically; drop the old one."""
        ...


@runtime_checkable
class StagedEngine(Protocol):
    """An engine that can reach the staging collections an interrupted re-index left."""

    def delete_staged(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt` from every staging collection of `collection`.

        Those a re-index killed or failed midway left (open or only on disk), never the one
        that serves `collection`. Raises `EngineError` when one cannot be read.
        """
        ...


def stream_searches(requests: Sequence[Fused]) -> list[Search]:
    """Each fused request's streams as id-only searches, in request then stream order."""
    return [
        Search(stream=s, filter=r.filter, limit=s.limit, with_payload=False)
        for r in requests
        for s in r.streams
    ]


def explain_fused(
    requests: Sequence[Fused],
    answers: Sequence[Sequence[Any]],
    native_id: Callable[[Any], Any],
    to_hit: Callable[[Any], Hit],
) -> list[list[tuple[Hit, StreamRanks]]]:
    """Pair each fused hit with its stream ranks, from a batch of fused + `stream_searches`.

    Rank tables are keyed by the engine's own id objects, so the hundreds of stream hits that
    did not make the fused top are never converted to `Hit`s (the hot path of a recall).
    """
    out: list[list[tuple[Hit, StreamRanks]]] = []
    position = len(requests)
    for index, request in enumerate(requests):
        fused = answers[index]
        keys = [native_id(point) for point in fused]
        ranks: dict[Any, StreamRanks] = {key: {} for key in keys}
        for stream in request.streams:
            # Only the fused hits need a rank: the rest of the stream's list is skipped.
            for rank, point in enumerate(answers[position], start=1):
                found = ranks.get(native_id(point))
                if found is not None:
                    found[stream.label] = (rank, point.score)
            position += 1
        explained = [(to_hit(point), ranks[key]) for point, key in zip(fused, keys, strict=True)]
        out.append(explained)
    return out


def ordered_page(
    engine: Engine,
    collection: str,
    flt: Filter,
    fetch: Callable[[bool | Sequence[str]], list[Hit]],
    *,
    key: str,
    limit: int,
    descending: bool,
    with_payload: bool | Sequence[str],
) -> list[Hit]:
    """The first `limit` points ordered by the number at `key`, equal numbers by point id.

    Descending is the exact reverse of ascending: among equal numbers, the greatest id first.

    Each backend orders points holding the same number its own way (Qdrant Edge newest write
    first, qdrant-client oldest first), so `read_recent` over episodes that ended at the same
    time gave different episodes on each. `fetch` is the engine's own ordered scroll of
    `limit` points with the given payload; the points tied with the last one are then read
    whole (some may lie past the page) and every tie is put in id order.
    """
    if limit <= 0:
        return []
    fields: bool | Sequence[str] = True if with_payload is True else (*(with_payload or ()), key)
    hits = fetch(fields)
    values = [h.payload.get(key) for h in hits]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return hits  # a nested key or a missing number: the engine's order stands
    numbers: list[float] = [float(v) for v in values]  # pyright: ignore[reportArgumentType]
    if len(hits) == limit:
        last = numbers[-1]
        tied = flt.and_(Range(key, gte=last, lte=last))
        if engine.count(collection, tied) > numbers.count(last):
            kept = [h for h, n in zip(hits, numbers, strict=True) if n != last]
            offset: str | None = None
            while True:
                page, offset = engine.scroll(
                    collection, tied, limit=256, with_payload=fields, offset=offset
                )
                kept.extend(page)
                if offset is None or not page:
                    break
            hits = kept
    # Descending is the exact reverse of ascending, ties included.
    ordered = sorted(hits, key=lambda h: (float(h.payload[key]), h.id), reverse=descending)
    ordered = ordered[:limit]
    if with_payload is True or key in (with_payload or ()):
        return ordered
    return [Hit(h.id, h.score, {k: v for k, v in h.payload.items() if k != key}) for h in ordered]
