"""A write whose caller is cancelled (a timeout) still ends stored or not, and the log says which.

The embedded engine cannot be interrupted mid-write, so `await memory.memorize(...)` under
`asyncio.wait_for` runs on in its worker thread after the caller gave up. Whether it then
stored the episode depended on whether the thread had started, and nobody was told either
way. A cancelled call now always runs to its end, and its outcome is logged; a retry with
the same `point_id` replaces instead of duplicating.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import Episode, EpisodicMemory, JSONLTaskStore, Task, TaskResult, open_engine
from episodex.testing import FailingEngine, HashEmbedder


@pytest.fixture
def failing() -> Iterator[tuple[EpisodicMemory, FailingEngine]]:
    engine = FailingEngine(open_engine(location=":memory:"))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    yield memory, engine
    memory.close()
    engine.close()


async def _settled(caplog: pytest.LogCaptureFixture, words: str) -> str:
    for _ in range(500):  # the worker thread finishes on its own time
        found = [r.getMessage() for r in caplog.records if words in r.getMessage()]
        if found:
            return found[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"nothing logged with {words!r}: {caplog.text}")


REFUND: dict[str, Any] = {
    "short_summary": "Refund for order 1234",
    "long_summary": "User asked for a refund; the agent issued it.",
    "user_id": "u1",
    "agent_id": "support",
    "conversation_id": "c1",
}


async def _cancelled_memorize(memory: EpisodicMemory, point_id: str) -> None:
    write = asyncio.create_task(memory.memorize(**REFUND, point_id=point_id))
    await asyncio.sleep(0)  # the call has started: it waits for its worker thread
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write


async def test_a_cancelled_memorize_is_stored_and_logged_and_retried_once(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, _ = failing
    point_id = str(uuid.uuid4())
    with caplog.at_level(logging.INFO, logger="episodex"):
        await _cancelled_memorize(memory, point_id)
        message = await _settled(caplog, "cancelled")
    assert "memorize_many" in message and "completed" in message
    assert await memory.count(user_id="u1", agent_id="support") == 1
    # The caller retries, with the same id: replaced, not stored twice.
    await memory.memorize(**REFUND, point_id=point_id)
    assert await memory.count(user_id="u1", agent_id="support") == 1


async def test_a_cancelled_memorize_that_fails_is_logged_as_failed(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    engine.writes = True
    with caplog.at_level(logging.INFO, logger="episodex"):
        await _cancelled_memorize(memory, str(uuid.uuid4()))
        message = await _settled(caplog, "cancelled")
    assert "failed" in message
    engine.writes = False
    assert await memory.count(user_id="u1", agent_id="support") == 0


async def test_a_cancelled_task_store_write_is_stored_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    task = Task(instruction="Convert 3 miles to km")
    episode = Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km"))
    with JSONLTaskStore(tmp_path) as store, caplog.at_level(logging.INFO, logger="episodex"):
        write = asyncio.create_task(store.write(episode))
        await asyncio.sleep(0)
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        message = await _settled(caplog, "cancelled")
        assert "JSONLTaskStore._write" in message and "completed" in message
        assert await store.count() == 1
