"""A LangGraph store write whose caller gives up (a timeout) still runs to its end, and says so.

`EpisodexStore.abatch` ran its batch with `asyncio.to_thread`. Cancelled while the batch waited
for a worker thread (the default executor busy, as under load), the batch never ran: a
`store.aput` wrapped in a timeout was silently lost, while one whose thread had started was
silently stored. The core's writes (`memorize`, the task and lesson stores) always run to
their end and log the outcome; the LangGraph store now does the same.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from pathlib import Path

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore

GUARD = 60  # seconds: only a deadlock guard


async def test_a_cancelled_put_is_stored_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loop = asyncio.get_running_loop()
    workers = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(workers)
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    store = EpisodexStore(memory, agent_id="assistant")
    caplog.set_level(logging.INFO)
    try:
        # The one worker thread is busy: the put waits for it, and is cancelled meanwhile.
        busy = threading.Event()
        blocker = loop.run_in_executor(None, busy.wait, GUARD)
        put = asyncio.create_task(store.aput(("alice", "food"), "diet", {"text": "vegetarian"}))
        await asyncio.sleep(0)  # the put hands its batch to the executor (no time passes)
        put.cancel()
        with pytest.raises(asyncio.CancelledError):
            await put
        busy.set()
        assert await blocker
        # The executor runs its jobs in order: this one runs after the put's batch.
        await loop.run_in_executor(None, lambda: None)
        item = await store.aget(("alice", "food"), "diet")
        assert item is not None and item.value == {"text": "vegetarian"}
        assert any("cancelled" in r.getMessage() for r in caplog.records), caplog.text
    finally:
        memory.close()
        workers.shutdown()
