"""Episodes a search scores the same come back in point-id order, on every task store.

Every attempt at a task is its own episode, so a task tried again with the same answer leaves
episodes whose indexed text is the same: a search scores them exactly alike. A single-stream
search (`mode="dense"`, `mode="bm25"`, or a hybrid search of a query BM25 has no word of) left
such ties in each backend's own order: Qdrant Edge the oldest write first, qdrant-client
`:memory:` the newest first, and `JSONLTaskStore` the last written first. A `SimilarityMemory`
with `k=1` then recalled another attempt from each store (and another again after an import in
another order). Fused searches already put equal scores in point-id order; now a plain search
does too, and `JSONLTaskStore` orders equal BM25 scores the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodex import (
    Episode,
    JSONLTaskStore,
    QdrantTaskStore,
    SimilarityMemory,
    Task,
    TaskResult,
)
from episodex.testing import HashEmbedder

from .backends import BACKENDS, drop_server_collections, engine_options

WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _attempts() -> list[Episode]:
    task = Task(id_="t-miles", instruction="Convert 3 miles to kilometres")
    return [
        Episode(
            id_=f"attempt-{i}",
            task=task,
            result=TaskResult(task_id=task.id_, content="4.83 km"),
            completed_at=WHEN + timedelta(minutes=i),
            metadata={"user": "u1"},
        )
        for i in range(6)
    ]


def _qdrant_stores(tmp_path: Path) -> list[QdrantTaskStore]:
    stores: list[QdrantTaskStore] = []
    for backend in BACKENDS:
        name = backend if isinstance(backend, str) else backend.values[0]
        path, options = engine_options(name, tmp_path / name)
        stores.append(
            QdrantTaskStore(
                path=None if path is None else str(path), embedder=HashEmbedder(), **options
            )
        )
    return stores


def _close(store: JSONLTaskStore | QdrantTaskStore) -> None:
    if isinstance(store, QdrantTaskStore):
        drop_server_collections(store.engine)
    store.close()


async def _write(store: JSONLTaskStore | QdrantTaskStore, order: list[int]) -> None:
    attempts = _attempts()
    for i in order:
        await store.write(attempts[i])


OPTIONS: list[dict[str, Any]] = [
    {"mode": "dense"},
    {"mode": "bm25"},
    {"mode": "dense", "filter": {"user": "u1"}},
    {"mode": "bm25", "score_threshold": 0.01},
]


async def test_every_store_cuts_a_tie_of_one_stream_the_same(tmp_path: Path) -> None:
    qdrant: dict[str, list[list[list[str]]]] = {}
    bm25: dict[str, list[list[str]]] = {}
    for order in ([0, 1, 2, 3, 4, 5], [5, 3, 1, 4, 0, 2]):
        jsonl = JSONLTaskStore(tmp_path / f"jsonl-{order[0]}")
        try:
            await _write(jsonl, order)
            bm25[f"jsonl {order}"] = [
                [e.id_ for e in await jsonl.search("miles to kilometres", k)] for k in (1, 2, 4)
            ]
        finally:
            jsonl.close()
        for store in _qdrant_stores(tmp_path / f"q-{order[0]}"):
            try:
                await _write(store, order)
                qdrant[f"{store.engine.kind} {order}"] = [
                    [
                        [e.id_ for e in await store.search("miles to kilometres", k, **options)]
                        for k in (1, 2, 4, 6)
                    ]
                    for options in OPTIONS
                ]
                bm25[f"{store.engine.kind} {order}"] = [
                    [e.id_ for e in await store.search("miles to kilometres", k, mode="bm25")]
                    for k in (1, 2, 4)
                ]
            finally:
                _close(store)
    first = next(iter(qdrant.values()))
    assert all(answer == first for answer in qdrant.values()), qdrant
    assert all(answer == first[0] for answer in first), first
    assert [len(found) for found in first[0]] == [1, 2, 4, 6]
    assert all(answer == first[0][:3] for answer in bm25.values()), bm25


async def test_similarity_memory_recalls_the_same_attempt_from_every_store(
    tmp_path: Path,
) -> None:
    recalled: dict[str, list[str]] = {}
    stores: list[JSONLTaskStore | QdrantTaskStore] = [
        JSONLTaskStore(tmp_path / "jsonl"),
        *_qdrant_stores(tmp_path),
    ]
    for store in stores:
        try:
            await _write(store, [2, 0, 5, 1, 4, 3])
            kwargs: dict[str, Any] = {} if isinstance(store, JSONLTaskStore) else {"mode": "bm25"}
            memory = SimilarityMemory(store, k=1, search_kwargs=kwargs)
            name = "jsonl" if isinstance(store, JSONLTaskStore) else store.engine.kind
            recalled[name] = [e.id_ for e in await memory.retrieve("Convert 3 miles to km")]
        finally:
            _close(store)
    assert len({tuple(ids) for ids in recalled.values()}) == 1, recalled
