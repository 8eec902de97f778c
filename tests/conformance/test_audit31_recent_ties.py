"""Episodes that ended at the same time are recalled in the same order on every task store.

The Qdrant stores order episodes sharing an end time by point id (the engine's one tie rule,
`test_audit_ordering_ties.py`); `JSONLTaskStore` ordered them by when they were written. So
over the same episodes (a batch import, times given to the second, episodes of one run),
`RecencyMemory` (and the recent half of `HybridMemory`) recalled other episodes from a JSONL
file than from Qdrant, and `summary` named another newest and oldest. The Qdrant stores
also order by the end time as a float, which no longer tells apart microseconds in the far
future, while JSONL compared the exact times. Now JSONL orders like the engines: by the
end time as stored there, then by point id.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from episodex import (
    Episode,
    JSONLTaskStore,
    QdrantTaskStore,
    RecencyMemory,
    Task,
    TaskResult,
)
from episodex.testing import HashEmbedder

from .backends import BACKENDS, engine_options

WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
FAR = datetime(9000, 1, 1, tzinfo=UTC)


def _episodes() -> list[Episode]:
    episodes: list[Episode] = []
    for i in range(8):
        task = Task(id_=f"t{i}", instruction=f"file the expense report number {i}")
        episodes.append(
            Episode(
                id_=f"episode-{i}",
                task=task,
                result=TaskResult(task_id=task.id_, content=f"filed {i}"),
                # Four share one time; two share a time in the far future a microsecond apart.
                completed_at=WHEN if i < 4 else FAR + timedelta(microseconds=i % 2),
                metadata={"n": i},
            )
        )
    # Written neither in id order nor in its reverse.
    return [episodes[i] for i in (5, 2, 7, 0, 3, 6, 1, 4)]


def _stores(tmp_path: Path, user_id: str | None) -> list[JSONLTaskStore | QdrantTaskStore]:
    stores: list[JSONLTaskStore | QdrantTaskStore] = [
        JSONLTaskStore(tmp_path / "jsonl", user_id=user_id)
    ]
    for backend in BACKENDS:
        name = backend if isinstance(backend, str) else backend.values[0]
        path, options = engine_options(name, tmp_path / name)
        stores.append(
            QdrantTaskStore(
                path=None if path is None else str(path),
                embedder=HashEmbedder(),
                user_id=user_id,
                **options,
            )
        )
    return stores


@pytest.mark.parametrize("user_id", [None, "u1"])
async def test_every_store_recalls_tied_episodes_in_one_order(
    tmp_path: Path, user_id: str | None
) -> None:
    stores = _stores(tmp_path, user_id)
    try:
        answers: list[tuple[list[list[str]], str, list[str]]] = []
        for store in stores:
            for episode in _episodes():
                await store.write(episode)
            recent = [[e.id_ for e in await store.read_recent(n)] for n in (1, 3, 5, 8)]
            recency = await RecencyMemory(store, n=3).recall("expense report")
            summary = (await store.summary()).splitlines()[1:]
            answers.append((recent, recency, summary))
        first = answers[0]
        for store, answer in zip(stores, answers, strict=True):
            assert answer == first, type(store).__name__
        # The far-future pair ties on the engines (their end times are one float there), so
        # every store orders the newest six by point id alone, not by time or by write.
        assert sorted(first[0][3][:4]) == ["episode-4", "episode-5", "episode-6", "episode-7"]
    finally:
        for store in stores:
            store.close()
