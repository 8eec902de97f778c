"""A request or stream with a limit below 1 finds nothing, on every backend.

Before, a search of limit 0 gave no hits on the embedded engine but every point on
qdrant-client `:memory:`; a limit of -1 raised a raw OverflowError from the embedded engine;
a fused request of limit 0, or with one stream of limit 0, answered on the embedded engine and
raised `EngineError` on qdrant-client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import Engine
from episodex.plan import CollectionSpec, Filter, Fused, Hit, Point, Search, Stream

from .backends import BACKENDS, loaded_engine

COLLECTION = "limits"
SPEC = CollectionSpec(name=COLLECTION, dense={"a": 2, "b": 2})
IDS = [f"00000000-0000-4000-8000-0000000000{i:02d}" for i in range(6)]
QUERY = [1.0, 0.0]


def point(i: int) -> Point:
    # "a" ranks the points 0, 1, ..., 5 and "b" ranks them 5, 4, ..., 0: no ties.
    return Point(IDS[i], {"a": [1.0, i / 6], "b": [1.0, (6 - i) / 6]}, {}, {"n": i})


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with loaded_engine(request.param, tmp_path, SPEC, [point(i) for i in range(6)]) as eng:
        yield eng


def numbers(hits: list[Hit]) -> list[int]:
    return [IDS.index(h.id) for h in hits]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_search_below_one_finds_nothing(engine: Engine, limit: int) -> None:
    searches = [
        Search(Stream("a", QUERY, 6), Filter(), limit),
        Search(Stream("a", QUERY, 3), Filter(), 3),
    ]
    empty, three = engine.query(COLLECTION, searches)
    assert empty == [] and numbers(three) == [0, 1, 2]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_fused_request_below_one_finds_nothing(engine: Engine, limit: int) -> None:
    streams = (Stream("a", QUERY, 6), Stream("b", QUERY, 6))
    request = Fused(streams, (1.0, 2.0), 60, Filter(), limit)
    assert engine.query(COLLECTION, [request]) == [[]]
    assert engine.query_explained(COLLECTION, [request]) == [[]]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_stream_below_one_finds_nothing_and_the_others_still_fuse(
    engine: Engine, limit: int
) -> None:
    alone = Fused((Stream("b", QUERY, 6),), (2.0,), 60, Filter(), 6)
    both = Fused((Stream("a", QUERY, limit), Stream("b", QUERY, 6)), (1.0, 2.0), 60, Filter(), 6)
    [expected] = engine.query(COLLECTION, [alone])
    assert numbers(expected) == [5, 4, 3, 2, 1, 0]
    [hits] = engine.query(COLLECTION, [both])
    assert [(h.id, pytest.approx(h.score)) for h in hits] == [(h.id, h.score) for h in expected]
    [explained] = engine.query_explained(COLLECTION, [both])
    assert [h.id for h, _ in explained] == [h.id for h in expected]
    assert all(set(ranks) == {"b"} for _, ranks in explained)
    nothing = Fused((Stream("a", QUERY, limit),), (1.0,), 60, Filter(), 6)
    assert engine.query(COLLECTION, [nothing, alone])[0] == []
    assert engine.query_explained(COLLECTION, [nothing])[0] == []
