"""The stream ranks a fused search reports are the ranks its fused scores were computed from.

Each recalled item says at what rank each stream found it, and its fused score is the sum of
`weight / (k + rank)` over those streams. The ranks come from id-only searches sent next to the
fused request; a way of answering that ranked a stream's equal scores one way for the fused
score and another way for the reported ranks (a faster one was tried: one scan per stream,
the fused request over what each scan found) would break that. These tests pin it on every
engine, with long runs of equal stream scores (the same sparse vector for many points) and
without, and that asking for the ranks changes neither the hits nor their scores.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from episodex.plan import CollectionSpec, Filter, Fused, Match, Point, SparseVec, Stream

from .backends import BACKENDS, loaded_engine

COLLECTION = "ranks"
SPEC = CollectionSpec(name=COLLECTION, dense={"d": 4}, sparse_plain=["s"], keywords=["g"])
WEIGHTS = (0.3, 0.7, 0.2)
K = 20


def _id(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012d}"


def _points(tied: bool = True) -> list[Point]:
    rng = random.Random(7)
    points: list[Point] = []
    for i in range(300):
        # Tied: three sparse vectors only, so a stream over them ranks long runs of equal
        # scores. Else every point's sparse score differs.
        word = i % 3
        second = 0.5 if tied else 0.5 + i / 1000
        sparse = SparseVec(indices=[word, 10 + word], values=[1.0 + word, second])
        dense = [rng.uniform(-1, 1) for _ in range(4)]
        points.append(
            Point(
                id=_id(i),
                dense={"d": dense},
                sparse={"s": sparse},
                payload={"g": f"g{i % 2}", "n": i},
            )
        )
    rng.shuffle(points)
    return points


def _requests(seed: int) -> list[Fused]:
    rng = random.Random(seed)
    dense = [rng.uniform(-1, 1) for _ in range(4)]
    sparse = SparseVec(indices=[0, 1, 2, 10, 11, 12], values=[1.0, 1.0, 1.0, 0.2, 0.2, 0.2])
    streams = (
        Stream("d", dense, 40),
        Stream("s", sparse, 60),
        Stream("s", sparse, 30, name="s_g0", filter=Filter(must=(Match("g", "g0"),))),
    )
    return [
        Fused(streams=streams, weights=WEIGHTS, k=K, filter=_group(g), limit=12) for g in GROUPS
    ]


GROUPS = ("g0", "g1")


def _group(g: str) -> Filter:
    return Filter(must=(Match("g", g),))


def _expected_score(ranks: dict[str, tuple[int, float]]) -> float:
    labels = ("d", "s", "s_g0")
    return sum(
        w / (K + ranks[label][0])
        for w, label in zip(WEIGHTS, labels, strict=True)
        if label in ranks
    )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.mark.parametrize("tied", [True, False])
def test_every_hit_scores_what_its_reported_ranks_give(
    backend: str, tmp_path: Path, tied: bool
) -> None:
    with loaded_engine(backend, tmp_path, SPEC, _points(tied)) as engine:
        for seed in range(12):
            requests = _requests(seed)
            explained = engine.query_explained(COLLECTION, requests)
            plain = engine.query(COLLECTION, requests)
            for group, hits, without_ranks in zip(GROUPS, explained, plain, strict=True):
                assert len(hits) == 12
                assert all(ranks for _, ranks in hits)
                for hit, ranks in hits:
                    assert hit.score == pytest.approx(_expected_score(ranks), rel=1e-5), ranks
                # The fused order and scores do not depend on asking for the ranks.
                assert [(h.id, pytest.approx(h.score, rel=1e-6)) for h, _ in hits] == [
                    (h.id, h.score) for h in without_ranks
                ]
                # Each hit comes with its own payload (read by id for the hits kept).
                assert {h.payload["g"] for h, _ in hits} == {group}
                assert all(h.id == _id(h.payload["n"]) for h, _ in hits)
