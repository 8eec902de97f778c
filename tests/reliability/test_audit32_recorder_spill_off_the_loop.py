"""Writing an episode ahead into the spill file does not hold the event loop.

With `spill_path`, every recorded episode is appended to the spill file (an fsync, and a file
lock another process may hold) before any write is tried, so a killed process loses none. That
append ran on the caller's event loop: an agent serving many users on one loop stalled all of
them for each turn's fsync (longer on a slow or network disk, or while another process held
the lock). It now runs in a worker thread, and a caller cancelled meanwhile has still queued
its episodes whole.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder


def _episode(n: int) -> dict[str, object]:
    return {
        "short_summary": f"turn {n}",
        "long_summary": f"user: question {n}\nassistant: answer {n}",
        "user_id": "u1",
        "agent_id": "a1",
        "conversation_id": "c1",
        "start_index": 2 * n,
        "end_index": 2 * n + 1,
    }


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


@pytest.fixture
def held_fsync(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[threading.Event, threading.Event, list[bool]]:
    """An fsync that waits until released; whether it was released (True) or timed out."""
    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        if not released:  # the first one: the append of the first episode
            entered.set()
            released.append(release.wait(3))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return entered, release, released


async def test_the_loop_runs_while_the_spill_file_is_synced(
    memory: EpisodicMemory,
    tmp_path: Path,
    held_fsync: tuple[threading.Event, threading.Event, list[bool]],
) -> None:
    entered, release, released = held_fsync
    recorder = EpisodeRecorder(memory, spill_path=tmp_path / "spill.jsonl")

    async def another_user() -> None:
        # Runs on the same loop while the append waits: it lets the fsync go.
        await asyncio.to_thread(entered.wait, 3)
        release.set()

    ids, _ = await asyncio.gather(recorder.record_many([_episode(0)]), another_user())
    assert released == [True]  # released by the other coroutine, not by the timeout
    assert ids[0] is not None
    assert await memory.count(user_id="u1", agent_id="a1") == 1
    await recorder.aclose()


async def test_a_caller_cancelled_during_the_append_has_queued_its_episodes(
    memory: EpisodicMemory,
    tmp_path: Path,
    held_fsync: tuple[threading.Event, threading.Event, list[bool]],
) -> None:
    entered, release, _ = held_fsync
    recorder = EpisodeRecorder(memory, spill_path=tmp_path / "spill.jsonl")
    call = asyncio.ensure_future(recorder.record_many([_episode(0), _episode(1)]))
    await asyncio.to_thread(entered.wait, 3)
    call.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await recorder.flush() == 0
    assert await memory.count(user_id="u1", agent_id="a1") == 2
    # Nothing is left counted as awaited by the cancelled call.
    assert recorder._awaited == {}  # pyright: ignore[reportPrivateUsage]
    await recorder.aclose()
