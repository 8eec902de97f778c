"""Engine congruence: one query plan, hand-made vectors, the same hits on every backend.

The memories build a plan once and each engine renders it (Qdrant Edge embedded,
qdrant-client `:memory:`, a live server when `QDRANT_URL` is set). These tests call the
engines directly, without a memory or a model in between, so a difference in how a backend
renders a filter, a fusion or an ordering shows up here as different hits.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import Engine
from episodex.plan import (
    CollectionSpec,
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

from .backends import BACKENDS, loaded_engine

COLLECTION = "congruence"
SPEC = CollectionSpec(
    name=COLLECTION,
    dense={"a": 4, "b": 4},
    sparse=("words",),
    tenant_key="user",
    keywords=("tag",),
    floats=("when",),
)
# Ids are UUIDs (every engine's id type); the last two digits are the point's number.
IDS = [f"00000000-0000-4000-8000-0000000000{i:02d}" for i in range(12)]


def point(i: int) -> Point:
    """Point i: its dense vectors turn with i, so every query has one exact ranking."""
    a = [1.0, i / 12, 0.0, 0.1]
    b = [0.1, 0.0, (12 - i) / 12, 1.0]
    words = SparseVec(indices=[i % 3, 10 + i % 4], values=[1.0, 0.5 + i / 24])
    return Point(
        id=IDS[i],
        dense={"a": a, "b": b},
        sparse={"words": words},
        payload={
            "user": "u1" if i < 9 else "u2",
            "tag": ("red", "green", "blue")[i % 3],
            "when": float(i),
            "n": i,
        },
    )


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with loaded_engine(request.param, tmp_path, SPEC, [point(i) for i in range(12)]) as eng:
        yield eng


def numbers(hits: list[Hit]) -> list[int]:
    return [IDS.index(h.id) for h in hits]


U1 = Filter(must=(Match("user", "u1"),))
# Stream a ranks u1's points 8, 7, ..., 0 and stream b ranks them 0, 1, ..., 8; unequal weights
# leave no two points with the same fused score, so the order is the engine's alone to get right.
FUSED = Fused(
    streams=(
        Stream("a", [1.0, 1.0, 0.0, 0.1], 9),
        Stream("b", [0.1, 0.0, 1.0, 1.0], 9),
    ),
    weights=(2.0, 1.0),
    k=60,
    filter=U1,
    limit=9,
)

# Each case: the request and the point numbers every engine must return, in order.
SEARCHES: list[tuple[str, Search | Fused, list[int]]] = [
    (
        "dense a, tenant filter",
        Search(Stream("a", [1.0, 1.0, 0.0, 0.1], 5), U1, 5),
        [8, 7, 6, 5, 4],
    ),
    (
        "dense b, tag filter",
        Search(
            Stream("b", [0.1, 0.0, 1.0, 1.0], 12),
            Filter(must=(MatchAny("tag", ("red", "blue")),)),
            12,
        ),
        [0, 2, 3, 5, 6, 8, 9, 11],
    ),
    (
        "dense a, range and exclusion",
        Search(
            Stream("a", [1.0, 0.0, 0.0, 0.1], 12),
            Filter(
                must=(Range("when", gte=2.0, lt=7.0),),
                must_not=(MatchExcept("tag", ("red", "green")),),
            ),
            12,
        ),
        [3, 4, 6],
    ),
    (
        "sparse words, ids",
        Search(
            Stream("words", SparseVec(indices=[11], values=[1.0]), 12),
            Filter(must=(HasId(tuple(IDS[:10])),)),
            12,
        ),
        [9, 5, 1],
    ),
]


@pytest.mark.parametrize(
    ("request_", "expected"), [c[1:] for c in SEARCHES], ids=[c[0] for c in SEARCHES]
)
def test_searches_give_the_expected_hits(
    engine: Engine, request_: Search | Fused, expected: list[int]
) -> None:
    [hits] = engine.query(COLLECTION, [request_])
    assert numbers(hits) == expected


# Every other backend against the embedded one (a server parameter brings its own marks).
@pytest.mark.parametrize("other", BACKENDS[1:])
def test_every_backend_fuses_like_the_embedded_one(tmp_path: Path, other: str) -> None:
    answers: dict[str, list[tuple[int, float]]] = {}
    for backend in ("edge", other):
        with loaded_engine(backend, tmp_path, SPEC, [point(i) for i in range(12)]) as eng:
            [hits] = eng.query(COLLECTION, [FUSED])
            answers[backend] = [(IDS.index(h.id), round(h.score, 5)) for h in hits]
    first = answers["edge"]
    assert sorted(i for i, _ in first) == list(range(9))
    assert len({score for _, score in first}) == 9  # no ties: the order is fully determined
    assert answers[other] == first, f"{other} fuses differently from edge"


def test_scroll_orders_and_pages_alike(engine: Engine) -> None:
    ordered, nxt = engine.scroll(COLLECTION, U1, limit=4, order_by="when", descending=True)
    assert numbers(ordered) == [8, 7, 6, 5] and nxt is None
    seen: list[int] = []
    offset: str | None = None
    while True:
        page, offset = engine.scroll(COLLECTION, Filter(), limit=5, offset=offset)
        seen += numbers(page)
        if offset is None:
            break
    assert sorted(seen) == list(range(12)) and len(seen) == 12


def test_count_and_delete_alike(engine: Engine) -> None:
    assert engine.count(COLLECTION, Filter()) == 12
    assert engine.count(COLLECTION, U1) == 9
    assert (
        engine.count(
            COLLECTION, Filter(must=(Match("tag", "red"),), must_not=(Match("user", "u2"),))
        )
        == 3
    )
    engine.delete(COLLECTION, Filter(must=(Match("tag", "green"),)))
    assert engine.count(COLLECTION, Filter()) == 8
    [hits] = engine.query(COLLECTION, [Search(Stream("a", [1.0, 1.0, 0.0, 0.1], 12), Filter(), 12)])
    assert all(IDS.index(h.id) % 3 != 1 for h in hits) and len(hits) == 8


def test_streams_sharing_one_query_vector_each_search_their_own_vector(engine: Engine) -> None:
    # A recall hands the same query list to the dense short and long streams (and one SPLADE
    # vector to both SPLADE streams); an engine that renders a shared vector once must still
    # search each named vector with it.
    shared = [1.0, 1.0, 1.0, 1.0]
    alone = engine.query(
        COLLECTION,
        [Search(Stream(name, list(shared), 9), U1, 9, with_payload=False) for name in ("a", "b")],
    )
    order = {name: numbers(hits) for name, hits in zip(("a", "b"), alone, strict=True)}
    assert order["a"] != order["b"]  # the two named vectors rank u1's points differently
    request = Fused(
        streams=(Stream("a", shared, 9), Stream("b", shared, 9)),
        weights=(2.0, 1.0),  # unequal: no two points tie
        k=60,
        filter=U1,
        limit=9,
    )
    [explained] = engine.query_explained(COLLECTION, [request])
    [plain] = engine.query(COLLECTION, [request])
    assert [h.id for h, _ in explained] == [h.id for h in plain]
    for hit, ranks in explained:
        for name in ("a", "b"):
            assert ranks[name][0] == order[name].index(IDS.index(hit.id)) + 1, (hit.id, ranks)
