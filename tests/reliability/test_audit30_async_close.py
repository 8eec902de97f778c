"""An async close lets the event loop run while it waits for a write under way.

`close()` waits for a write in progress (one whose caller gave up goes on in its thread) so that
it ends stored, never cut in half. `aclose()`, `async with`'s exit and the task store's
`aclose()` called that blocking `close()` on the event loop: while the write ran, every other
task of the loop stalled (an agent answering another user, a health check). Now they wait for
the write in a worker thread and keep close's guarantees: the write ends whole, a second close
is fine, and calls after close raise `StoreClosedError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from episodex import Episode, EpisodicMemory, QdrantTaskStore, StoreClosedError, Task, TaskResult
from episodex.testing import HashEmbedder

GUARD = 60  # seconds: only a deadlock guard, never how the calls meet
BLOCKED = 10  # seconds: when a blocked loop (the defect) is given up on and the write released

EPISODE: dict[str, Any] = {
    "short_summary": "Asked for a refund",
    "long_summary": "User: refund? Assistant: done.",
    "user_id": "u1",
    "agent_id": "support",
    "conversation_id": "c1",
}


class _UpsertWaits:
    """Put in place of `engine.upsert`: a write stays under way (inside the lock) until `go`."""

    def __init__(self, real: Callable[..., None]) -> None:
        self.real = real
        self.entered = threading.Event()
        self.go = threading.Event()
        # If the loop is blocked the test cannot set `go`: release the write after the guard,
        # so a failing test fails instead of hanging.
        self.guard = threading.Timer(BLOCKED, self.go.set)
        self.guard.daemon = True

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if not self.entered.is_set():
            self.entered.set()
            self.go.wait()
        self.real(*args, **kwargs)


async def _loop_runs_while_closing(
    close: Callable[[], Coroutine[Any, Any, None]],
    write: Callable[[], Coroutine[Any, Any, Any]],
    gate: _UpsertWaits,
) -> None:
    writing = asyncio.create_task(write())
    assert await asyncio.to_thread(gate.entered.wait, GUARD), "the write never started"
    gate.guard.start()
    closing = asyncio.create_task(close())
    await asyncio.sleep(0)  # the close starts (no time passes)

    async def another_user() -> None:
        pass

    # Runs at once if the loop is free; only after the write (the guard) if close blocks it.
    await asyncio.create_task(another_user())
    released_by_test = not gate.go.is_set()
    gate.go.set()
    gate.guard.cancel()
    await writing
    await closing
    assert released_by_test, "the other task ran only after the write: close blocked the loop"


@pytest.mark.parametrize("how", ["aclose", "async with"])
async def test_aclose_lets_the_loop_run_during_a_write(tmp_path: Path, how: str) -> None:
    memory = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False)
    gate = _UpsertWaits(memory.engine.upsert)
    memory.engine.upsert = gate  # type: ignore[method-assign]

    async def close() -> None:
        if how == "aclose":
            await memory.aclose()
        else:
            await memory.__aexit__(None, None, None)

    await _loop_runs_while_closing(close, lambda: memory.memorize(**EPISODE), gate)
    # The write ended whole before the engine closed: reopened, the episode is there.
    await memory.aclose()  # a second close is fine
    with pytest.raises(StoreClosedError):
        await memory.count(user_id="u1", agent_id="support")
    async with EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False) as again:
        assert await again.count(user_id="u1", agent_id="support") == 1


@pytest.mark.parametrize("how", ["aclose", "async with"])
async def test_task_store_aclose_lets_the_loop_run_during_a_write(tmp_path: Path, how: str) -> None:
    store = QdrantTaskStore(path=str(tmp_path / "tasks"), embedder=HashEmbedder())
    gate = _UpsertWaits(store.engine.upsert)
    store.engine.upsert = gate  # type: ignore[method-assign]

    async def close() -> None:
        if how == "aclose":
            await store.aclose()
        else:
            await store.__aexit__(None, None, None)

    async def write() -> None:
        task = Task(instruction="Book a flight to Oslo")
        await store.write(Episode(task=task, result=TaskResult(task_id=task.id_, content="ok")))

    await _loop_runs_while_closing(close, write, gate)
    await store.aclose()
    with pytest.raises(StoreClosedError):
        await store.count()
    async with QdrantTaskStore(path=str(tmp_path / "tasks"), embedder=HashEmbedder()) as again:
        assert await again.count() == 1
