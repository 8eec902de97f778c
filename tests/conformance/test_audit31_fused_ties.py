"""Hits with the same fused score come back in point-id order, on every engine, in every call.

Two episodes that two equally weighted streams rank the other way round (second and third by
the short summary, third and second by the long one) have the very same fused score. Each
backend ordered such ties its own way: Qdrant Edge by where the points lay in its segments
(so by the order they were written, and differently again when the stream ranks were asked
for), qdrant-client `:memory:` by its own. A recall whose limit cut through such a tie gave
one episode on one store and the other on another, or after the same episodes were imported
in another order. Now every engine orders equal fused scores by point id, reading the hits
tied with the last one past the limit too, so the cut is the same everywhere.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from episodex import Embedder, EpisodicMemory, default_embedder
from episodex.plan import CollectionSpec, Filter, Fused, Point, Stream

from .backends import BACKENDS, engine_options, loaded_engine

COLLECTION = "ties"
SPEC = CollectionSpec(name=COLLECTION, dense={"a": 2, "b": 2})


def _id(i: int) -> str:
    return f"00000000-0000-4000-8000-0000000000{i:02d}"


def _unit(first: float) -> list[float]:
    return [first, math.sqrt(1.0 - first * first)]


# Stream a ranks the points 0, 1, 2, ..., 7; stream b ranks point 0 first, then the others in
# pairs swapped: (2, 1), (4, 3), (6, 5), so each pair has one fused score under equal weights.
A_ORDER = [0, 1, 2, 3, 4, 5, 6, 7]
B_ORDER = [0, 2, 1, 4, 3, 6, 5, 7]


def _point(i: int) -> Point:
    a = _unit(1.0 - A_ORDER.index(i) / 10)
    b = _unit(1.0 - B_ORDER.index(i) / 10)
    return Point(id=_id(i), dense={"a": a, "b": b[::-1]}, sparse={}, payload={"n": i})


def _fused(limit: int) -> Fused:
    return Fused(
        streams=(Stream("a", [1.0, 0.0], 8), Stream("b", [0.0, 1.0], 8)),
        weights=(1.0, 1.0),
        k=60,
        filter=Filter(),
        limit=limit,
    )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.mark.parametrize("written", [[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0]])
def test_equal_fused_scores_are_ordered_by_point_id(
    backend: str, tmp_path: Path, written: list[int]
) -> None:
    points = [_point(i) for i in written]
    with loaded_engine(backend, tmp_path, SPEC, points) as engine:
        whole = engine.query(COLLECTION, [_fused(8)])[0]
        scores = {int(h.payload["n"]): h.score for h in whole}
        assert scores[1] == scores[2] and scores[3] == scores[4]  # the ties are exact
        assert [h.payload["n"] for h in whole] == list(range(8))
        for limit in range(1, 8):
            # Every cut, through a tie or not, keeps the same points, in the same order.
            plain = engine.query(COLLECTION, [_fused(limit)])[0]
            explained = engine.query_explained(COLLECTION, [_fused(limit)])[0]
            assert [h.payload["n"] for h in plain] == list(range(limit)), limit
            assert [h.payload["n"] for h, _ in explained] == list(range(limit)), limit


DATA = ["refund for order 1234", "trip to Paris", "skiing"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return default_embedder()


def test_a_recall_cut_through_a_tie_gives_the_same_episodes_on_every_store(
    tmp_path: Path, embedder: Embedder
) -> None:
    # With the bundled models, "In" finds nothing by BM25 or SPLADE for the first two episodes,
    # and the short and long searches rank them second and third the other way round.
    found: dict[tuple[str, str, bool], list[str]] = {}
    for backend in ("edge", "memory"):
        for written in ([0, 1, 2], [2, 1, 0]):
            folder = tmp_path / f"{backend}{written[0]}"
            path, options = engine_options(backend, folder)
            mem = EpisodicMemory(path, embedder=embedder, **options)
            try:
                mem.store.memorize_many(
                    [
                        {
                            "short_summary": DATA[i],
                            "long_summary": DATA[i] + " long",
                            "user_id": "u",
                            "agent_id": "a",
                            "conversation_id": f"c{i}",
                            "point_id": _id(i),
                        }
                        for i in written
                    ]
                )
                for ranks in (True, False):
                    result = mem.store.recall(
                        user_id="u",
                        agent_id="a",
                        query="In",
                        previous_conversation_limit=2,
                        with_stream_ranks=ranks,
                    )
                    found[backend, str(written), ranks] = [
                        e["point_id"] for e in result["previous_conversations"]
                    ]
            finally:
                mem.close()
    assert set(map(tuple, found.values())) == {(_id(2), _id(0))}, found
