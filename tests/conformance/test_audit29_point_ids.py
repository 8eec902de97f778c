"""A point id that is not a UUID is refused with `ValidationError` on every backend.

Point ids are UUIDs on every engine. Before, writing a point under another id raised
`ValidationError` on Qdrant Edge but `EngineError` on qdrant-client; and a `HasId` filter
naming one counted, read and deleted nothing on qdrant-client (so `must_not` matched every
point) while Qdrant Edge raised `EngineError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import Engine, ValidationError
from episodex.plan import CollectionSpec, Filter, HasId, Point

from .backends import BACKENDS, loaded_engine

SPEC = CollectionSpec(name="ids", dense={"a": 2})
IDS = ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"]
NOT_UUIDS = ["zz", "5", "", "00000000-0000-4000-8000-00000000000"]


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    points = [Point(i, {"a": [1.0, 0.0]}, {}, {}) for i in IDS]
    with loaded_engine(request.param, tmp_path, SPEC, points) as eng:
        yield eng


@pytest.mark.parametrize("bad", NOT_UUIDS)
def test_a_point_id_that_is_no_uuid_is_refused_alike(engine: Engine, bad: str) -> None:
    with pytest.raises(ValidationError, match="UUID"):
        engine.upsert(SPEC.name, [Point(IDS[0], {"a": [0.0, 1.0]}, {}, {}), Point(bad, {}, {}, {})])
    with pytest.raises(ValidationError, match="UUID"):
        engine.count(SPEC.name, Filter(must_not=(HasId((IDS[0], bad)),)))
    with pytest.raises(ValidationError, match="UUID"):
        engine.delete(SPEC.name, Filter(must_not=(HasId((bad,)),)))
    assert engine.count(SPEC.name, Filter()) == 2
    assert engine.count(SPEC.name, Filter(must=(HasId((IDS[0].upper(),)),))) == 1
