"""Backend-neutral query plans: filters, searches, fused searches, points and collection specs.

A plan is built once by the memory classes and rendered by each engine (`_edge.py` for Qdrant
Edge, `_qdrant.py` for qdrant-client), so the embedded engine and a Qdrant server answer the
very same request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Match:
    """Payload `key` equals `value`."""

    key: str
    value: str | int | bool


@dataclass(frozen=True, slots=True)
class MatchAny:
    """Payload `key` equals one of `values` (or, for a list field, contains one of them)."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MatchExcept:
    """Payload `key` equals none of `values`."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """Numeric payload `key` within the given bounds."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


@dataclass(frozen=True, slots=True)
class HasId:
    """The point id is one of `ids`."""

    ids: tuple[str, ...]


Condition = Match | MatchAny | MatchExcept | Range | HasId


@dataclass(frozen=True, slots=True)
class Filter:
    """All of `must`, none of `must_not`."""

    must: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()

    def and_(self, *conditions: Condition) -> Filter:
        """Return this filter with more `must` conditions."""
        return Filter(self.must + tuple(conditions), self.must_not)

    def and_not(self, *conditions: Condition) -> Filter:
        """Return this filter with more `must_not` conditions."""
        return Filter(self.must, self.must_not + tuple(conditions))


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
