"""`optimize` keeps `min_free_bytes` free on the folder that serves each collection.

A merge rewrites a collection's segments, so `optimize` asks for room for a new copy of them
first. It measured the folder named after the collection; after a re-index a collection is
served from its staging folder and the folder of its name is gone, so the check asked for
nothing and a merge could fill the disk (SIGBUS on the memory-mapped files). The test uses a
tmpfs of its own, so other writers on the machine do not move its free space.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory, StorageFullError
from episodex._engines.space import used_bytes
from episodex.testing import HashEmbedder

from ._support import tmpfs

MiB = 1024 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "1g", "OPTIMIZE FREE-SPACE TEST") as mounted:
        yield mounted


def _new() -> HashEmbedder:
    return HashEmbedder(dimension=48, model_id="test/new")


async def test_optimize_after_a_reindex_needs_room_for_the_served_folder(disk: Path) -> None:
    path = disk / "store"
    memory = EpisodicMemory(
        path, embedder=HashEmbedder(dimension=32), splade=False, min_free_bytes=0
    )
    try:
        await memory.memorize_many(
            [
                {
                    "short_summary": f"order {i}",
                    "long_summary": f"the user asked about order {i} " * 40,
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": "c",
                }
                for i in range(200)
            ]
        )
        await memory.reindex(_new(), batch_size=8)
    finally:
        memory.close()
    served = next(p for p in path.iterdir() if p.name.startswith("episodes_reindex_"))
    assert not (path / "episodes").exists()
    first = EpisodicMemory(path, embedder=_new(), splade=False, min_free_bytes=0)
    try:
        used = used_bytes(served)
        assert used > 1 * MiB
        # A second memory on the folder shares its open collection: it opens needing nothing,
        # with room for half the served folder and not for a second copy of it.
        min_free = shutil.disk_usage(disk).free - used // 2
        memory = EpisodicMemory(path, embedder=_new(), splade=False, min_free_bytes=min_free)
        try:
            with pytest.raises(StorageFullError, match="optimizing"):
                await memory.optimize()
            assert await memory.count(user_id="u", agent_id="a") == 200
        finally:
            memory.close()
    finally:
        first.close()
