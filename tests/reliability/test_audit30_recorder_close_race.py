"""A deferred recorder's `aclose` writes every episode recorded before it returns.

`aclose` flushed, then marked the recorder closed, with no lock; the background writer checked
that nothing was pending, marked itself idle, then read the mark. An episode recorded after the
writer's check and after the flush had taken its batch, but before the mark, was queued for a
writer that then stopped: `aclose` returned with it pending, and only another `flush` wrote it
(a process ending after `aclose` lost it). Now `aclose` marks the recorder closed under the
queue's lock first, stops the writer (which decides to stop under that lock), then writes what
is pending itself; an episode recorded after the mark writes itself, as before.

The test holds the writer between its check and its reading of the mark, and the final write
in the store, with events: no timing decides the order.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import recorder_episode, stored_summaries

GUARD = 60  # seconds: only a deadlock guard, never how the threads meet


class _WriterPausesWhenIdle(threading.Event):
    """Put in place of the recorder's `_idle`: the writer's next `set` pauses it twice.

    Before the flag is set (it has just found nothing pending) until `resume`, and after it
    until `aclose` joins the writer, so the writer goes on only once the recorder is closed.
    """

    def __init__(self) -> None:
        super().__init__()
        super().set()
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.joined = threading.Event()
        self._armed = True

    def set(self) -> None:
        if not (self._armed and threading.current_thread().name == "episodex-recorder"):
            super().set()
            return
        self._armed = False
        self.paused.set()
        assert self.resume.wait(GUARD)
        super().set()
        assert self.joined.wait(GUARD)


class _JoinSignals:
    """Put in place of the recorder's `_worker`: tells the pausing writer when it is joined."""

    def __init__(self, thread: threading.Thread, idle: _WriterPausesWhenIdle) -> None:
        self.thread = thread
        self.idle = idle

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self.idle.joined.set()
        self.thread.join(timeout)


class _WritesWaitWhenArmed:
    """Put in place of `memory.store.memorize_many`: once armed, the next write waits for `go`."""

    def __init__(self, memory: EpisodicMemory) -> None:
        self.real = memory.store.memorize_many
        self.armed = False
        self.entered = threading.Event()
        self.go = threading.Event()

    def __call__(self, episodes: Any, **kwargs: Any) -> list[str]:
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.go.wait(GUARD)
        return self.real(episodes, **kwargs)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


async def test_an_episode_recorded_while_aclose_writes_is_stored(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = EpisodeRecorder(memory, deferred=True)
    idle = _WriterPausesWhenIdle()
    worker = recorder._worker  # pyright: ignore[reportPrivateUsage]
    assert worker is not None
    recorder._idle = idle  # pyright: ignore[reportPrivateUsage]
    recorder._worker = _JoinSignals(worker, idle)  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    store = _WritesWaitWhenArmed(memory)
    monkeypatch.setattr(memory.store, "memorize_many", store)

    # The writer stores episode 1, finds nothing pending and pauses; then episode 2 is queued.
    await recorder.record(**recorder_episode(1))
    assert await asyncio.to_thread(idle.paused.wait, GUARD)
    await recorder.record(**recorder_episode(2))
    store.armed = True
    idle.resume.set()

    # aclose's write of episode 2 waits in the store while episode 3 is recorded.
    close = asyncio.create_task(recorder.aclose())
    assert await asyncio.to_thread(store.entered.wait, GUARD)
    third = asyncio.create_task(recorder.record(**recorder_episode(3)))
    while recorder.stats().pending < 2:
        await asyncio.sleep(0)  # lets the record call queue its episode (no time passes)
    store.go.set()
    await asyncio.wait_for(asyncio.gather(close, third), GUARD)

    # Everything recorded before aclose returned is stored, with no flush after it.
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.write_failures) == (3, 0, 0)
    assert not worker.is_alive()
