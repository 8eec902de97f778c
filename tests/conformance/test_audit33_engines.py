"""The two engines behind every store, run through the same operations, must leave the same state.

A re-index that failed midway leaves its staging collection (a whole copy of the episodes) so a
second run with the same embedder resumes it. Qdrant Edge deletes every such copy when a later
re-index switches; qdrant-client (`:memory:` and a server) deleted only the collection it
switched away from, so a copy left by a re-index with another embedder stayed on the server
for good, holding every user's episodes and taking its room. Now a switch drops them on every
engine, and only them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, open_engine
from episodex.testing import HashEmbedder

from .backends import BACKENDS, drop_server_collections, engine_options

U, A = "user-1", "agent-1"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "point_id": str(uuid.UUID(int=i + 1)),
            "user_id": U,
            "agent_id": A,
            "conversation_id": "c1",
            "short_summary": f"episode number {i}",
            "long_summary": f"the longer text of episode number {i}",
            "start_index": 2 * i,
            "end_index": 2 * i + 2,
        }
        for i in range(n)
    ]


def _collections(memory: EpisodicMemory, path: Path | None) -> list[str]:
    """The episode collections the engine holds: folders, or the server's collections."""
    if path is not None:
        return sorted(p.name for p in path.iterdir() if p.is_dir() and p.name.startswith("ep"))
    engine: Any = memory.engine
    prefix: str = engine._prefix  # pyright: ignore[reportUnknownMemberType]
    return sorted(
        c.name.removeprefix(prefix)
        for c in engine.client.get_collections().collections
        if c.name.startswith(f"{prefix}episodes")
    )


def _stop(done: int, total: int) -> None:
    raise RuntimeError("the re-index was stopped")


async def test_a_switch_drops_the_staging_copies_failed_reindexes_left(
    backend: str, tmp_path: Path
) -> None:
    path, options = engine_options(backend, tmp_path)
    engine = open_engine(path=None if path is None else str(path), **options)
    memory = EpisodicMemory(
        engine=engine, embedder=HashEmbedder(dimension=32, model_id="test/old"), splade=False
    )
    try:
        await memory.memorize_many(_records(5))
        with pytest.raises(RuntimeError, match="stopped"):
            await memory.reindex(
                HashEmbedder(dimension=16, model_id="test/abandoned"),
                batch_size=2,
                on_progress=_stop,
            )
        assert len(_collections(memory, path)) == 2  # the store and the abandoned copy
        await memory.reindex(HashEmbedder(dimension=24, model_id="test/new"))
        serving = _collections(memory, path)
        assert len(serving) == 1, serving
        await memory.reindex(HashEmbedder(dimension=8, model_id="test/newer"))
        assert len(_collections(memory, path)) == 1
        assert await memory.count(user_id=U, agent_id=A) == 5
        found = await memory.recall(user_id=U, agent_id=A, query="episode number 3")
        assert found["previous_conversations"]
    finally:
        drop_server_collections(engine)
        await memory.aclose()
        engine.close()
