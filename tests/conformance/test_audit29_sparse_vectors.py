"""A malformed sparse vector is refused with `ValidationError` on every backend, nothing written.

Before, Qdrant Edge took one with more indices than values into its write-ahead log and then
panicked applying it (a `PanicException`, not even an `Exception`); every later open replayed
the log and panicked again, so the store could never be opened. It stored a repeated index
that qdrant-client refused, and a negative or too large index failed in the binding.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ValidationError, open_engine
from episodex.plan import CollectionSpec, Filter, Point, Search, SparseVec, Stream

from .backends import BACKENDS, loaded_engine

SPEC = CollectionSpec(name="sparse", dense={"a": 2}, sparse=("words",))
GOOD = Point(
    "00000000-0000-4000-8000-000000000001",
    {"a": [1.0, 0.0]},
    {"words": SparseVec([1, 7], [1.0, 0.5])},
    {"n": 1},
)
BAD = {
    "more indices than values": SparseVec([1, 2], [1.0]),
    "more values than indices": SparseVec([1], [1.0, 2.0]),
    "a repeated index": SparseVec([3, 3], [1.0, 2.0]),
    "a negative index": SparseVec([-1], [1.0]),
    "an index beyond 32 bits": SparseVec([2**32], [1.0]),
    "a fractional index": SparseVec([1.5], [1.0]),  # pyright: ignore[reportArgumentType]
    "a bool index": SparseVec([True], [1.0]),
}


def bad_point(vector: SparseVec) -> Point:
    return Point("00000000-0000-4000-8000-000000000002", {"a": [0.0, 1.0]}, {"words": vector}, {})


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_malformed_sparse_vector_is_refused_alike(
    backend: str, case: str, tmp_path: Path
) -> None:
    with loaded_engine(backend, tmp_path, SPEC, [GOOD]) as engine:
        with pytest.raises(ValidationError, match="sparse"):
            engine.upsert(SPEC.name, [GOOD, bad_point(BAD[case])])
        query = Search(Stream("words", BAD[case], 5), Filter(), 5)
        with pytest.raises(ValidationError, match="sparse"):
            engine.query(SPEC.name, [query])
        assert engine.count(SPEC.name, Filter()) == 1
        [hits] = engine.query(
            SPEC.name, [Search(Stream("words", SparseVec([7], [1.0]), 5), Filter(), 5)]
        )
        assert [h.id for h in hits] == [GOOD.id]


def test_the_embedded_store_opens_again_after_a_refused_sparse_vector(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    engine = open_engine(path=path)
    engine.ensure_collection(SPEC)
    engine.upsert(SPEC.name, [GOOD])
    with pytest.raises(ValidationError):
        engine.upsert(SPEC.name, [bad_point(BAD["more indices than values"])])
    engine.close()
    again = open_engine(path=path)
    try:
        again.ensure_collection(SPEC)
        assert again.count(SPEC.name, Filter()) == 1
    finally:
        again.close()
