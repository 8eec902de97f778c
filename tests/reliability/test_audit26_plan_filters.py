"""A plan filter an engine cannot take is refused with `ValidationError` when it is built.

`QdrantTaskStore.search` passes a caller's plan `Filter` through to the engine. Its conditions
were not checked: a `Range` bound of NaN made the embedded engine panic (a
`pyo3_runtime.PanicException`, which is not even an `Exception`, so no "survive a memory
failure" handler catches it); a `Match` value that is a float, None or an integer over 64 bits,
a `Range` bound that is text, or an empty key failed with a raw `TypeError`/`ValueError` (the
embedded engine) or pydantic's own `ValidationError` (qdrant-client); and `HasId` given one id
as a plain string searched its characters, silently finding nothing on one engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from episodex import Episode, QdrantTaskStore, Task, ValidationError
from episodex.plan import Filter, HasId, Match, MatchAny, MatchExcept, Range
from episodex.testing import HashEmbedder

BAD: dict[str, Callable[[], Any]] = {
    "range NaN": lambda: Range("completed_at", gte=math.nan),
    "range text": lambda: Range("completed_at", lt="tomorrow"),  # type: ignore[arg-type]
    "range bool": lambda: Range("completed_at", gt=True),
    "match float": lambda: Match("metadata.score", 1.5),  # type: ignore[arg-type]
    "match None": lambda: Match("metadata.score", None),  # type: ignore[arg-type]
    "match int over 64 bits": lambda: Match("metadata.n", 2**64),
    "match empty key": lambda: Match("", "x"),
    "match any mixed": lambda: MatchAny("metadata.tag", ("a", 1)),  # type: ignore[arg-type]
    "match any a string": lambda: MatchAny("metadata.tag", "abc"),  # type: ignore[arg-type]
    "match except floats": lambda: MatchExcept("metadata.tag", (1.5,)),  # type: ignore[arg-type]
    "has id a string": lambda: HasId("00000000-0000-4000-8000-000000000001"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("backend", ["edge", "memory"])
@pytest.mark.parametrize("case", list(BAD))
async def test_a_condition_no_engine_can_take_is_a_validation_error(
    tmp_path: Path, backend: str, case: str
) -> None:
    store = (
        QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
        if backend == "edge"
        else QdrantTaskStore(location=":memory:", embedder=HashEmbedder())
    )
    try:
        await store.write(Episode(task=Task(instruction="hello world"), metadata={"score": 1}))
        with pytest.raises(ValidationError):
            await store.search("hello", 3, filter=Filter(must=(BAD[case](),)))
        assert len(await store.search("hello", 3)) == 1  # the store goes on answering
    finally:
        store.close()


async def test_conditions_engines_take_still_work(tmp_path: Path) -> None:
    with_inf = Filter(
        must=(
            Range("completed_at", gte=-math.inf, lt=math.inf),
            Match("metadata.n", -(2**63)),
            MatchAny("metadata.tags", ("a", "b")),
            MatchExcept("metadata.tags", ("z",)),
        ),
        must_not=(HasId(("00000000-0000-4000-8000-000000000001",)),),
    )
    store = QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
    try:
        task = Task(instruction="hello world")
        await store.write(Episode(task=task, metadata={"n": -(2**63), "tags": ["a"]}))
        assert len(await store.search("hello", 3, filter=with_inf)) == 1
    finally:
        store.close()
