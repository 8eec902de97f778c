"""A NaN score threshold is refused with `ValidationError`; infinite ones answer alike.

Before, a search with `score_threshold=nan` found nothing on Qdrant Edge and every point on
qdrant-client `:memory:`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import Engine, ValidationError
from episodex.plan import CollectionSpec, Filter, Point, Search, Stream

from .backends import BACKENDS, loaded_engine

SPEC = CollectionSpec(name="threshold", dense={"a": 2})
IDS = [f"00000000-0000-4000-8000-0000000000{i:02d}" for i in range(3)]


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    points = [Point(IDS[i], {"a": [1.0, i / 3]}, {}, {}) for i in range(3)]
    with loaded_engine(request.param, tmp_path, SPEC, points) as eng:
        yield eng


def search(threshold: float) -> Search:
    return Search(Stream("a", [1.0, 0.0], 3), Filter(), 3, score_threshold=threshold)


def test_a_nan_threshold_is_refused(engine: Engine) -> None:
    with pytest.raises(ValidationError, match="score_threshold"):
        engine.query(SPEC.name, [search(float("nan"))])


@pytest.mark.parametrize(("threshold", "found"), [(float("inf"), 0), (float("-inf"), 3), (2.0, 0)])
def test_other_thresholds_answer_alike(engine: Engine, threshold: float, found: int) -> None:
    [hits] = engine.query(SPEC.name, [search(threshold)])
    assert len(hits) == found
