"""A re-index deletes only its own abandoned staging collections, never another collection.

After switching, the embedded engine deleted every folder named `<collection>_reindex_*` that
no collection name was served from, to clear staging copies a killed run left behind. A task
(or any other) collection sharing the store folder under such a name, say
`episodes_reindex_archive`, open and holding episodes, was deleted with them: its files went
from under the open engine, its episodes were lost, and closing the store then failed.
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


def _conversation(i: int) -> dict[str, object]:
    return {
        "short_summary": f"episode {i} about order {i}",
        "long_summary": f"the user asked about order {i}",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": "c",
    }


async def test_a_collection_named_like_a_staging_copy_survives_a_reindex(tmp_path: Path) -> None:
    path = tmp_path / "store"
    old = HashEmbedder(dimension=32, model_id="test/old")
    new = HashEmbedder(dimension=48, model_id="test/new")
    tasks = HashEmbedder(model_id="test/tasks")
    memory = EpisodicMemory(path, embedder=old, splade=False)
    try:
        await memory.memorize_many([_conversation(i) for i in range(20)])
        store = QdrantTaskStore(
            memory=memory, collection="episodes_reindex_archive", embedder=tasks
        )
        for i in range(3):
            await store.write(Episode(id_=f"e{i}", task=Task(instruction=f"task {i}")))
        await memory.reindex(new, batch_size=8)
        assert await store.count() == 3
        await store.write(Episode(id_="e3", task=Task(instruction="task 3")))
    finally:
        memory.close()  # failed with the folder gone from under the open collection
    memory = EpisodicMemory(path, embedder=new, splade=False)
    try:
        store = QdrantTaskStore(
            memory=memory, collection="episodes_reindex_archive", embedder=tasks
        )
        assert sorted(e.id_ for e in await store.read_recent(10)) == ["e0", "e1", "e2", "e3"]
        assert await memory.count(user_id="u", agent_id="a") == 20
    finally:
        memory.close()


class _Stop(Exception):
    pass


async def test_an_abandoned_staging_copy_is_still_cleared(tmp_path: Path) -> None:
    path = tmp_path / "store"
    memory = EpisodicMemory(
        path, embedder=HashEmbedder(dimension=32, model_id="test/old"), splade=False
    )
    try:
        await memory.memorize_many([_conversation(i) for i in range(20)])

        def stop(done: int, total: int) -> None:
            raise _Stop  # the run ends midway, as a killed one does

        with pytest.raises(_Stop):
            await memory.reindex(
                HashEmbedder(dimension=40, model_id="test/abandoned"),
                batch_size=8,
                on_progress=stop,
            )
        left = [p.name for p in path.iterdir() if "_reindex_" in p.name]
        assert len(left) == 1  # the abandoned staging copy
        # A run with another embedder builds its own copy and, once switched, clears that one.
        await memory.reindex(HashEmbedder(dimension=48, model_id="test/new"), batch_size=8)
        now = [p.name for p in path.iterdir() if "_reindex_" in p.name]
        assert left[0] not in now and len(now) == 1
        assert await memory.count(user_id="u", agent_id="a") == 20
    finally:
        memory.close()
