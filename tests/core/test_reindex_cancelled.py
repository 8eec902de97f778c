"""A re-index whose caller gives up (a timeout) still leaves the memory on the new store.

The re-index runs in a worker thread that cannot be stopped halfway, so it finishes and switches
the store to the new collection. The memory used to take the new store and embedder only in the
awaiting coroutine, after the thread returned: when that coroutine was cancelled, the memory
kept the old embedder and recalled the new collection with it (vectors of another length: every
recall failed; of the same length: another model's answers). It now switches with the store.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder


def _episode(i: int) -> dict[str, Any]:
    return {
        "short_summary": f"ticket {i}: the printer on floor {i % 5} jams",
        "long_summary": f"ticket {i}: the printer on floor {i % 5} jams on every second page",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": f"c{i % 3}",
    }


async def test_a_cancelled_reindex_still_leaves_the_memory_on_the_new_store(
    tmp_path: Path,
) -> None:
    old = HashEmbedder(dimension=32, model_id="test/old")
    new = HashEmbedder(dimension=48, model_id="test/new")
    mem = EpisodicMemory(path=tmp_path / "s", embedder=old, splade=False)
    try:
        await mem.memorize_many([_episode(i) for i in range(120)])
        started = threading.Event()

        def progress(done: int, total: int) -> None:
            started.set()
            time.sleep(0.05)  # long enough for the caller to give up meanwhile

        job = asyncio.create_task(mem.reindex(new, batch_size=20, on_progress=progress))
        while not started.is_set():
            await asyncio.sleep(0.005)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

        # The thread goes on to the switch; the memory follows it there.
        deadline = time.monotonic() + 30
        while mem.embedder is not new and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert mem.embedder is new
        found = await mem.recall(user_id="u", agent_id="a", query="printer jams on floor 3")
        assert found["previous_conversations"]
        assert await mem.count(user_id="u", agent_id="a") == 120
    finally:
        mem.close()
