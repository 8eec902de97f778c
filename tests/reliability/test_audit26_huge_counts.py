"""A count too large for the embedded engine's 64-bit fields means "all of them", not a crash.

Counts (`read_recent(n)`, `search(k=...)`, `rrf_k`, a re-index's `batch_size`, a recall's
limits) are checked to be integers of at least their minimum, with no maximum: any larger one is
as good as "every episode". On the embedded engine one of 2**64 or more reached the binding's
64-bit fields and raised a raw `OverflowError`, outside episodex's error tree (the
`:memory:` engine answered it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    Episode,
    EpisodicMemory,
    QdrantTaskStore,
    Task,
)
from episodex.testing import HashEmbedder

HUGE = [2**64, 2**80]


@pytest.mark.parametrize("n", HUGE)
async def test_task_store_counts_beyond_64_bits_read_everything(tmp_path: Path, n: int) -> None:
    store = QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
    try:
        for i in range(3):
            await store.write(Episode(id_=f"e{i}", task=Task(instruction=f"convert {i} miles")))
        assert len(await store.read_recent(n)) == 3
        assert len(await store.search("convert miles", n)) == 3
        assert len(await store.search("convert miles", 2, rrf_k=n)) == 2
        assert len(await store.search("convert miles", n, mode="bm25")) == 3
    finally:
        store.close()


@pytest.mark.parametrize("n", HUGE)
async def test_recall_and_reindex_counts_beyond_64_bits(tmp_path: Path, n: int) -> None:
    memory = EpisodicMemory(
        tmp_path / "episodes",
        embedder=HashEmbedder(dimension=32, model_id="test/old"),
        splade=False,
    )
    try:
        await memory.memorize_many(
            [
                {
                    "short_summary": f"order {i} was late",
                    "long_summary": f"the user asked where order {i} was",
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": f"c{i}",
                }
                for i in range(4)
            ]
        )
        found = await memory.recall(
            user_id="u",
            agent_id="a",
            query="late order",
            previous_conversation_limit=n,
            stage1_limit=n,
            rrf_k=n,
        )
        assert len(found["previous_conversations"]) == 4
        report = await memory.reindex(HashEmbedder(dimension=48, model_id="test/new"), batch_size=n)
        assert report.episodes == report.embedded == 4
    finally:
        memory.close()
