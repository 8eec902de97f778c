"""A stream with its own name and filter (the `dated` stream) renders alike on every engine.

One fused request may search the same named vector twice: once over the request's filter, once
narrowed by the stream's own conditions (a period). Each engine must apply the narrowing to that
stream alone, in the fused request and in the stream's rank search, and report its ranks under
the stream's name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import Engine
from episodex.plan import CollectionSpec, Filter, Fused, Hit, Match, Point, Range, Search, Stream

from .backends import BACKENDS, loaded_engine

COLLECTION = "narrowed"
SPEC = CollectionSpec(name=COLLECTION, dense={"a": 2}, tenant_key="user", floats=("when",))
IDS = [f"00000000-0000-4000-8000-0000000000{i:02d}" for i in range(10)]
U1 = Filter(must=(Match("user", "u1"),))
EARLY = Filter(must=(Range("when", lt=4.0),))  # points 0-3 (and u2's 8, outside U1)
QUERY = [1.0, 0.0]


def point(i: int) -> Point:
    # Stream "a" ranks u1's points 7, 6, ..., 0: the early ones come last unless narrowed.
    return Point(
        id=IDS[i],
        dense={"a": [1.0, 1.0 - i / 10]},
        sparse={},
        payload={"user": "u1" if i < 8 else "u2", "when": float(i % 8)},
    )


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with loaded_engine(request.param, tmp_path, SPEC, [point(i) for i in range(10)]) as eng:
        yield eng


def numbers(hits: list[Hit]) -> list[int]:
    return [IDS.index(h.id) for h in hits]


def test_a_stream_filter_narrows_that_stream_alone_within_the_request_filter(
    engine: Engine,
) -> None:
    [plain] = engine.query(COLLECTION, [Search(Stream("a", QUERY, 10), U1, 10)])
    assert numbers(plain) == [7, 6, 5, 4, 3, 2, 1, 0]
    narrowed = Stream("a", QUERY, 10, name="early", filter=EARLY)
    [early] = engine.query(COLLECTION, [Search(narrowed, U1, 10)])
    assert numbers(early) == [3, 2, 1, 0]  # u2's point 8 is early too, but not u1's

    request = Fused(
        streams=(Stream("a", QUERY, 2), narrowed),
        weights=(1.0, 3.0),  # no two points tie: the order is the engine's alone to get right
        k=1,
        filter=U1,
        limit=6,
    )
    [explained] = engine.query_explained(COLLECTION, [request])
    [fused] = engine.query(COLLECTION, [request])
    assert numbers([h for h, _ in explained]) == numbers(fused)
    # Narrowed: 3, 2, 1, 0 score 3/2, 3/3, 3/4, 3/5; whole (its 2 best): 7 and 6, 1/2 and 1/3.
    assert numbers(fused) == [3, 2, 1, 0, 7, 6]
    ranks = {IDS.index(h.id): r for h, r in explained}
    assert ranks[7] == {"a": (1, pytest.approx(ranks[7]["a"][1]))}
    assert set(ranks[3]) == {"early"} and ranks[3]["early"][0] == 1
    assert all(n < 8 for n in ranks)  # the other tenant's early point never comes in


def test_a_stream_without_a_name_is_reported_under_its_vector(engine: Engine) -> None:
    stream = Stream("a", QUERY, 3)
    assert stream.label == "a" and stream.narrowed(U1) is U1
    named = Stream("a", QUERY, 3, name="early", filter=EARLY)
    assert named.label == "early"
    assert named.narrowed(U1) == Filter(must=(*U1.must, *EARLY.must))
