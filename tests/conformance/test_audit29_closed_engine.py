"""A closed engine refuses every call with `StoreClosedError`, on every backend.

The embedded engine's `ensure_collection` skipped the check: on a closed handle it loaded the
collection's shard again, outside the folder lock it had released, and kept it open for good
(another process could then open the same folder and both would write it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from episodex import Engine, StoreClosedError, open_engine
from episodex.plan import CollectionSpec, Filter, Fused, Point, Search, Stream

from .backends import BACKENDS, drop_server_collections, engine_options

SPEC = CollectionSpec(name="closing", dense={"a": 2})
POINT = Point("00000000-0000-4000-8000-000000000001", {"a": [1.0, 0.0]}, {}, {})
SEARCH = Search(Stream("a", [1.0, 0.0], 3), Filter(), 3)
FUSED = Fused((Stream("a", [1.0, 0.0], 3),), (1.0,), 60, Filter(), 3)

CALLS: dict[str, Callable[[Engine], object]] = {
    "ensure_collection": lambda e: e.ensure_collection(SPEC),
    "upsert": lambda e: e.upsert(SPEC.name, [POINT]),
    "delete": lambda e: e.delete(SPEC.name, Filter()),
    "query": lambda e: e.query(SPEC.name, [SEARCH]),
    "query_explained": lambda e: e.query_explained(SPEC.name, [FUSED]),
    "scroll": lambda e: e.scroll(SPEC.name, Filter(), limit=3),
    "count": lambda e: e.count(SPEC.name, Filter()),
    "optimize": lambda e: e.optimize(),
}


def open_closed(backend: str, tmp_path: Path) -> tuple[Engine, Path | None]:
    path, options = engine_options(backend, tmp_path)
    engine = open_engine(path=str(path) if path else None, **options)
    engine.ensure_collection(SPEC)
    engine.upsert(SPEC.name, [POINT])
    drop_server_collections(engine)
    engine.close()
    return engine, path


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closed_engine_refuses_every_call(backend: str, call: str, tmp_path: Path) -> None:
    engine, _ = open_closed(backend, tmp_path)
    with pytest.raises(StoreClosedError):
        CALLS[call](engine)
    engine.close()  # closing again is fine


def test_a_closed_embedded_engine_leaves_its_folder_to_the_next_opener(tmp_path: Path) -> None:
    engine, path = open_closed("edge", tmp_path)
    with pytest.raises(StoreClosedError):
        engine.ensure_collection(SPEC)
    # Nothing of the closed handle is still open: a new engine opens and writes the folder.
    again = open_engine(path=str(path))
    try:
        again.ensure_collection(SPEC)
        assert again.count(SPEC.name, Filter()) == 1
    finally:
        again.close()
