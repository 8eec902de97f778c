"""The task store answers alike on Qdrant Edge and qdrant-client `:memory:` for the same calls.

The same task episodes (metadata of every filterable kind: strings, lists, nested keys, bools,
negative and large integers, a non-ASCII value; completed times that tie) are written to a
`QdrantTaskStore` on each engine, then every read is asked of both: `count`, `read_recent`
(cut through ties), `summary`, `search` in `dense` and `bm25` mode with and without filters and
score thresholds, `update`, `delete` and a missing id. The answers must be the same.

Working memory holds no engine (one process's entries), so it has no engine to differ by.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from episodex import Episode, EpisodexError, QdrantTaskStore, Task, TaskResult
from episodex.testing import HashEmbedder

from .backends import engine_options

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)

EPISODES: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("a", "Convert 3 miles to kilometres", "4.83 km", {"user": "u1", "n": 1, "tags": ["x"]}, 0),
    ("b", "Convert 10 miles to km", "16.09 km", {"user": "u2", "n": 2, "flag": True}, 0),
    ("c", "Water the plants", "done", {"user": "u1", "n": -3, "nested": {"k": "v"}}, 1),
    ("d", "Book a flight to Paris", "booked", {"user": "u3", "n": 2**40, "s": ""}, 1),
    ("e", "the and of", "x", {"user": "u1", "big": 2**62}, 2),
    ("f", "Convert 5 km to miles", "3.1 miles", {"user": ["u1", "u2"]}, 3),
    ("g", "émigré café naïve", "ok", {"user": "ü"}, 3),
    ("h", "file expense report", "filed", {"n": 1.0}, 4),
]

QUERIES = ["convert miles", "café", "paris flight", "the and of", "zzz"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"user": "u1"},
    {"user": ["u1", "u2"]},
    {"n": 2},
    {"n": -3},
    {"n": 2**40},
    {"big": 2**62},
    {"flag": True},
    {"nested.k": "v"},
    {"tags": "x"},
    {"s": ""},
    {"user": "ü"},
]


def _episode(id_: str, instruction: str, answer: str, metadata: dict[str, Any], at: int) -> Episode:
    task = Task(id_=f"t-{id_}", instruction=instruction)
    return Episode(
        id_=id_,
        task=task,
        result=TaskResult(task_id=task.id_, content=answer),
        metadata=metadata,
        completed_at=T0 + timedelta(minutes=at),
    )


async def _answers(backend: str, folder: Path) -> dict[str, object]:
    path, options = engine_options(backend, folder)
    store = QdrantTaskStore(path, embedder=HashEmbedder(), **options)
    got: dict[str, object] = {}
    try:
        for spec in EPISODES:
            await store.write(_episode(*spec))
        got["count"] = await store.count()
        for n in (1, 2, 3, 4, 20):
            got[f"recent {n}"] = [e.id_ for e in await store.read_recent(n)]
        # The first line names the engine; the rest is what is held.
        got["summary"] = (await store.summary()).splitlines()[1:]
        for query in QUERIES:
            for flt in FILTERS:
                for mode in ("dense", "bm25"):
                    for threshold in (None, 0.0, 0.3):
                        options_: dict[str, Any] = {"mode": mode, "score_threshold": threshold}
                        if flt is not None:
                            options_["filter"] = flt
                        key = f"{query!r} {flt} {mode} {threshold}"
                        try:
                            found = await store.search(query, k=4, **options_)
                        except EpisodexError as exc:  # the same refusal on both
                            got[key] = type(exc).__name__
                        else:
                            got[key] = [e.id_ for e in found]
        stored = _episode("a", "Convert 3 miles to kilometres", "5 km", {"user": "u9"}, 9)
        await store.update(stored)
        got["after update"] = [e.id_ for e in await store.read_recent(20)]
        got["updated found"] = [
            e.id_ for e in await store.search("convert", k=5, filter={"user": "u9"}, mode="bm25")
        ]
        await store.delete("b")
        got["after delete"] = [e.id_ for e in await store.read_recent(20)]
        with pytest.raises(EpisodexError) as missing:
            await store.delete("b")
        got["delete missing"] = type(missing.value).__name__
    finally:
        store.close()
    return got


async def test_the_task_store_answers_alike_on_both_embedded_engines(tmp_path: Path) -> None:
    edge = await _answers("edge", tmp_path)
    memory = await _answers("memory", tmp_path)
    assert edge.keys() == memory.keys()
    assert {k: v for k, v in edge.items() if memory[k] != v} == {}
    # The answers are real ones, not empty on both.
    assert edge["count"] == 8
    assert edge["recent 3"] == ["h", "f", "g"]
    assert edge["'convert miles' {'user': 'u1'} bm25 None"] == ["f", "a"]
    assert edge["'café' {'user': 'ü'} dense 0.3"] == ["g"]
    assert edge["'zzz' {'n': 2} dense None"] == ["b"]
    assert edge["updated found"] == ["a"]
    assert edge["after delete"] == ["a", "h", "f", "g", "e", "d", "c"]
    assert edge["delete missing"] == "EpisodeNotFoundError"
    assert edge["'café' {'flag': True} bm25 None"] == "ValidationError"
