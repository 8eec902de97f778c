"""A task store never writes over another tenant's episode through a crafted episode id.

A task episode's point id is derived from its episode id and, for a tenant's store, the
tenant's key: `uuid5(key + "\\n" + episode_id)`. A store shared by everyone (no user or agent)
derives it from the episode id alone, so its episode id `'["alice", "bot"]\\nE1'` named the
very point of Alice's episode `E1`: writing it replaced Alice's episode with one of the shared
store, which Alice then no longer had. Such a write is now refused with `ValidationError`
before anything is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodex import Episode, EpisodicMemory, QdrantTaskStore, Task, ValidationError
from episodex.testing import HashEmbedder


def _episode(episode_id: str, instruction: str) -> Episode:
    return Episode(id_=episode_id, task=Task(instruction=instruction), rollout="done")


@pytest.mark.parametrize("location", ["edge", "memory"])
async def test_a_shared_store_cannot_overwrite_a_tenants_episode(
    location: str, tmp_path: Path
) -> None:
    memory = (
        EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False)
        if location == "edge"
        else EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    )
    alice = QdrantTaskStore(memory=memory, user_id="alice", agent_id="bot")
    shared = QdrantTaskStore(memory=memory)
    try:
        await alice.write(_episode("E1", "book a table for two"))
        crafted = json.dumps(["alice", "bot"]) + "\nE1"
        with pytest.raises(ValidationError, match="another"):
            await shared.write(_episode(crafted, "transfer all the money"))
        # Alice's episode is untouched, and the shared store holds nothing.
        (mine,) = await alice.read_recent(5)
        assert mine.id_ == "E1" and mine.task.instruction == "book a table for two"
        assert await alice.count() == 1 and await shared.count() == 0
        # The other way round too: a tenant's store never reaches a shared store's point.
        await shared.write(_episode("S1", "shared note"))
        assert [e.id_ for e in await shared.read_recent(5)] == ["S1"]
        assert await alice.count() == 1
    finally:
        memory.close()
