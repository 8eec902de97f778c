"""The query plan every `Engine` answers: filters, searches, fused searches, points, hits.

These are the argument and result types of the public `Engine` protocol. The memories build a
plan once and each engine renders it (Qdrant Edge embedded, qdrant-client for a server or
`:memory:`), so code that calls an engine directly, such as a congruence test or a custom
store, uses the same types and gets the same answers on every backend.
"""

from episodex._engines.plan import (
    CollectionSpec,
    Condition,
    Filter,
    Fused,
    HasId,
    Hit,
    Match,
    MatchAny,
    MatchExcept,
    Point,
    Range,
    Search,
    SparseVec,
    Stream,
)

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
