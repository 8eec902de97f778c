"""Backend-neutral query plans: filters, searches, fused searches, points and collection specs.

A plan is built once by the memory classes and rendered by each engine (`_edge.py` for Qdrant
Edge, `_qdrant.py` for qdrant-client), so the embedded engine and a Qdrant server answer the
very same request.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from episodex._common.errors import ValidationError
from episodex._common.validation import INT64_MAX, INT64_MIN, is_integer, is_real
from episodex._common.vectors import SparseVec

__all__ = [
    "CollectionSpec",
    "Condition",
    "Filter",
    "Fused",
    "HasId",
    "Hit",
    "Match",
    "MatchAny",
    "MatchExcept",
    "Point",
    "Range",
    "Search",
    "SparseVec",
    "Stream",
]


# Conditions are checked when made: a caller may build them (`QdrantTaskStore.search` takes a
# plan `Filter`), and a value an engine cannot take failed there with an untyped error (a NaN
# bound made the embedded engine panic, an exception that is not even an `Exception`).


def _check_key(key: object, condition: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValidationError(f"{condition} key must be a non-empty payload path, got {key!r}")


def _is_int64(value: object) -> bool:
    # Any `numbers.Integral` (a numpy int64 too), matched as the int it is.
    return is_integer(value) and INT64_MIN <= int(value) <= INT64_MAX


def _check_values(values: object, condition: str) -> object:
    """The values, checked; given back as they are unless an integer is not an int (numpy's)."""
    if isinstance(values, str) or not isinstance(values, tuple | list):
        raise ValidationError(f"{condition} values must be a tuple of values, got {values!r}")
    items = list(values)  # pyright: ignore[reportUnknownArgumentType]
    if all(isinstance(v, str) for v in items):
        return values
    if not all(_is_int64(v) for v in items):
        raise ValidationError(
            f"{condition} values must be all strings or all 64-bit integers, got {values!r}"
        )
    if all(isinstance(v, int) for v in items):
        return values
    return tuple(int(v) for v in items)


@dataclass(frozen=True, slots=True)
class Match:
    """Payload `key` equals `value`."""

    key: str
    value: str | int | bool

    def __post_init__(self) -> None:
        _check_key(self.key, "Match")
        if not isinstance(self.value, str | bool) and not _is_int64(self.value):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"Match value must be a string, a bool or a 64-bit integer, got {self.value!r}"
            )
        if not isinstance(self.value, str | bool | int):  # pyright: ignore[reportUnnecessaryIsInstance]
            object.__setattr__(self, "value", int(self.value))  # a numpy int64: as an int


@dataclass(frozen=True, slots=True)
class MatchAny:
    """Payload `key` equals one of `values` (or, for a list field, contains one of them)."""

    key: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_key(self.key, "MatchAny")
        object.__setattr__(self, "values", _check_values(self.values, "MatchAny"))


@dataclass(frozen=True, slots=True)
class MatchExcept:
    """Payload `key` equals none of `values`."""

    key: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_key(self.key, "MatchExcept")
        object.__setattr__(self, "values", _check_values(self.values, "MatchExcept"))


@dataclass(frozen=True, slots=True)
class Range:
    """Numeric payload `key` within the given bounds."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None

    def __post_init__(self) -> None:
        _check_key(self.key, "Range")
        for name in ("gt", "gte", "lt", "lte"):
            bound = getattr(self, name)
            if bound is not None and (not is_real(bound) or bound != bound):
                raise ValidationError(
                    f"Range {name} must be a number (not NaN) or None, got {bound!r}"
                )
            if bound is not None and not isinstance(bound, int | float):
                # A numpy float32 (any other `numbers.Real`): the engines take Python numbers.
                value = int(bound) if is_integer(bound) else float(bound)
                object.__setattr__(self, name, value)


def _is_uuid(point_id: object) -> bool:
    try:
        uuid.UUID(point_id)  # pyright: ignore[reportArgumentType]
    except (ValueError, AttributeError, TypeError):
        return False
    return True


def _check_point_ids(ids: Sequence[object], what: str) -> None:
    # Point ids are UUIDs on every engine: another id was stored by none, and was refused
    # (`EngineError` on qdrant-client) or, in a filter, matched nothing on one engine while the
    # other raised.
    for point_id in ids:
        if not isinstance(point_id, str) or not _is_uuid(point_id):
            raise ValidationError(f"{what} must be a UUID string, got {point_id!r}")


@dataclass(frozen=True, slots=True)
class HasId:
    """The point id is one of `ids`."""

    ids: tuple[str, ...]

    def __post_init__(self) -> None:
        if isinstance(self.ids, str) or not isinstance(self.ids, tuple | list):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"HasId ids must be a tuple of point ids, got {self.ids!r}")
        if not all(isinstance(i, str) for i in self.ids):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"HasId ids must be point id strings, got {self.ids!r}")
        _check_point_ids(self.ids, "a HasId point id")


@dataclass(frozen=True, slots=True)
class Filter:
    """All of `must`, none of `must_not`.

    A filter is a condition too: `must_not=(Filter(must=(a,), must_not=(b,)),)` keeps the
    points where `a` fails or `b` holds.
    """

    must: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()

    def and_(self, *conditions: Condition) -> Filter:
        """Return this filter with more `must` conditions."""
        return Filter(self.must + tuple(conditions), self.must_not)

    def and_not(self, *conditions: Condition) -> Filter:
        """Return this filter with more `must_not` conditions."""
        return Filter(self.must, self.must_not + tuple(conditions))


Condition = Match | MatchAny | MatchExcept | Range | HasId | Filter


@dataclass(frozen=True, slots=True)
class Stream:
    """One retrieval stream: a query vector against one named vector of the collection.

    Attributes:
        using: The named vector searched.
        vector: The query vector.
        limit: How many hits the stream ranks.
        name: What results call the stream (default: `using`); two streams of one request
            may search the same named vector under different names.
        filter: Conditions this stream alone adds to its request's filter (a period, say).
    """

    using: str
    vector: list[float] | SparseVec
    limit: int
    name: str = ""
    filter: Filter | None = None

    @property
    def label(self) -> str:
        """The stream's name in results: `name`, or the named vector it searches."""
        return self.name or self.using

    def narrowed(self, flt: Filter) -> Filter:
        """`flt` with this stream's own conditions added."""
        if self.filter is None:
            return flt
        return Filter(flt.must + self.filter.must, flt.must_not + self.filter.must_not)


@dataclass(frozen=True, slots=True)
class Search:
    """A single-stream nearest-neighbour search."""

    stream: Stream
    filter: Filter
    limit: int
    with_payload: bool | tuple[str, ...] = True
    score_threshold: float | None = None

    def __post_init__(self) -> None:
        # NaN found nothing on Qdrant Edge and every point on qdrant-client.
        threshold = self.score_threshold
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
            or threshold != threshold
        ):
            raise ValidationError(
                f"score_threshold must be a number (not NaN) or None, got {threshold!r}"
            )


@dataclass(frozen=True, slots=True)
class Fused:
    """Several streams as prefetches, fused in the engine by weighted Reciprocal Rank Fusion.

    Each stream ranks its `limit` best alone; a hit's score is the sum, over the streams that
    found it, of `weight / (k + rank)` (rank counted from 1), the textbook weighted RRF. Qdrant's
    own weighted RRF, `1 / (rank / weight + k - 1)`, also shrinks a low-weight stream's k, so
    the engines compute this one from single-stream RRF prefetches and a score formula.
    """

    streams: tuple[Stream, ...]
    weights: tuple[float, ...]
    k: int
    filter: Filter
    limit: int
    with_payload: bool | tuple[str, ...] = True


@dataclass(frozen=True, slots=True)
class Hit:
    """A point returned by a search, scroll or retrieve."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Point:
    """A point to write: id, named dense and sparse vectors, payload."""

    id: str
    dense: Mapping[str, list[float]]
    sparse: Mapping[str, SparseVec]
    payload: Mapping[str, Any]

    def __post_init__(self) -> None:
        _check_point_ids((self.id,), "a point id")


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """The shape of a collection and the payload indexes it keeps.

    Attributes:
        name: Collection name (a server collection name gets the memory's prefix).
        dense: Named dense vectors and their dimension; all compared by cosine.
        sparse: Named sparse vectors with the IDF modifier (BM25 term frequencies).
        sparse_plain: Named sparse vectors whose weights are final (learned sparse, SPLADE).
        tenant_key: The payload key that partitions tenants (`is_tenant=true` on a server).
        keywords: Other keyword-indexed payload keys.
        floats: Float-indexed payload keys (ranges and ordering).
        integers: Integer-indexed payload keys.
    """

    name: str
    dense: Mapping[str, int]
    sparse: Sequence[str] = ()
    sparse_plain: Sequence[str] = ()
    tenant_key: str | None = None
    keywords: Sequence[str] = ()
    floats: Sequence[str] = ()
    integers: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict[str, Any])
