"""Recorders sharing one spill file write it one at a time.

Recorders of one process (a classic LangChain memory per session, each with its recorder) or
of several share a spill file, and each write reads every episode waiting in it. Two writes
ran at once: while recorder A's write of an episode it read from the file was under way,

- recorder B's `forget` of that conversation deleted what was stored and took the episode out
  of the file, then A's write stored it: the forgotten turn was back for good;
- recorder B stored a newer version of that episode (recorded again under its id), then A's
  write stored the old one over it: the newer version was lost.

Now a write, a `forget` and a `forget_waiting` hold a lock file beside the spill file
(`<name>.write.lock`) from reading the file to taking out what was stored, so the other
recorder's call waits for A's write and works on what it left.

A's write is held inside the store until the other call has had its chance to run: without
the lock it runs to the end meanwhile (the old code), with it it waits (the check below
allows it a second to get past; the assertions are on what is stored at the end).
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

from ._support import FirstWriteWaits, recorder_episode, stored_summaries

GUARD = 60  # seconds: only a deadlock guard
CHANCE = 1.0  # seconds the other call is given to run past A's write (it must not)
POINT = "00000000-0000-4000-8000-000000000035"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


async def test_a_conversation_forgotten_during_another_recorders_write_stays_forgotten(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill = tmp_path / "pending.jsonl"
    first, second = (EpisodeRecorder(memory, spill_path=spill) for _ in range(2))
    gate = FirstWriteWaits(memory)
    monkeypatch.setattr(memory.store, "memorize_many", gate)
    real_forget = memory.store.forget
    forgotten = threading.Event()

    def forget(**kwargs: Any) -> int:
        count = real_forget(**kwargs)
        forgotten.set()
        return count

    monkeypatch.setattr(memory.store, "forget", forget)
    writing = asyncio.ensure_future(first.record(**recorder_episode(1)))
    try:
        assert await asyncio.to_thread(gate.entered.wait, GUARD)
        forgetting = asyncio.ensure_future(
            second.forget(user_id="u1", agent_id="support", conversation_id="c1")
        )
        # The forget must wait for the write under way (old code: it ran to the end).
        assert not await asyncio.to_thread(forgotten.wait, CHANCE)
        gate.go.set()
        assert await asyncio.wait_for(writing, GUARD) is not None
        assert await asyncio.wait_for(forgetting, GUARD) == 1
    finally:
        gate.go.set()
        await asyncio.gather(writing, return_exceptions=True)
    assert stored_summaries(memory) == []
    assert await first.flush() == 0
    assert await second.flush() == 0
    assert stored_summaries(memory) == []
    assert not spill.exists()


async def test_a_newer_version_another_recorder_stored_is_not_overwritten(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill = tmp_path / "pending.jsonl"
    first, second = (EpisodeRecorder(memory, spill_path=spill) for _ in range(2))
    gate = FirstWriteWaits(memory)
    monkeypatch.setattr(memory.store, "memorize_many", gate)
    writing = asyncio.ensure_future(first.record(**recorder_episode(1, point_id=POINT)))
    try:
        assert await asyncio.to_thread(gate.entered.wait, GUARD)
        newer = asyncio.ensure_future(second.record(**recorder_episode(2, point_id=POINT)))
        # The newer version's write must wait for the old one's (old code: it ran first).
        done, _ = await asyncio.wait({newer}, timeout=CHANCE)
        assert not done
        gate.go.set()
        assert await asyncio.wait_for(writing, GUARD) == POINT
        assert await asyncio.wait_for(newer, GUARD) == POINT
    finally:
        gate.go.set()
        await asyncio.gather(writing, return_exceptions=True)
    assert stored_summaries(memory) == ["question 2"]
    assert await first.flush() == 0
    assert await second.flush() == 0
    assert stored_summaries(memory) == ["question 2"]
    # Each version stored once, by one of the two.
    assert first.stats().recorded + second.stats().recorded == 2
    assert not spill.exists()
