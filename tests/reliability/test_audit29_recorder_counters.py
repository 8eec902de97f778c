"""The recorder's `stats()` and `flush()` never raise for its spill file, and count honestly.

Adapters call `stats()` and `flush()` after the model has answered (LangChain's classic memory
checks `stats().pending` after every exchange), so neither may raise for a store or disk
failure. Two flaws remained:

- `stats()` counted the spill file's lines by opening it, and raised `OSError` when it could
  not be read at all (an I/O error, or a spill path that is a folder); `flush()` returns
  `stats().pending`, so it raised too. Now both report what they can and keep the error in
  `last_error`.
- Once the episodes of the spill file were stored, a rewrite of the file that failed (a
  read-only disk) left them there: they were still reported as pending, stored again and
  counted in `recorded` again (or refused and counted in `rejected` again) on the next flush,
  and an episode the user forgot meanwhile came back. Now an episode is counted once, and one
  that is stored is never written again from the spill file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import StoreDown, recorder_episode, remount, stored_summaries


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


# -- stats() and flush() never raise for the spill file ----------------------------------


async def test_a_spill_path_that_is_a_folder_never_makes_stats_or_flush_raise(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill = tmp_path / "pending"
    spill.mkdir()  # a path meant for a folder of spill files, given as the file
    recorder = EpisodeRecorder(memory, spill_path=spill)
    assert await recorder.record(**recorder_episode(1)) is not None
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.spilled) == (1, 0, 0)
    assert "IsADirectoryError" in (stats.last_error or "")
    assert await recorder.flush() == 0
    # While the store is down, what the queue cannot hold cannot be spilled there: dropped,
    # counted, and the reason kept.
    store = StoreDown.put_in(memory, monkeypatch)
    small = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    await small.record(**recorder_episode(2))
    await small.record(**recorder_episode(3))
    assert await small.flush() == 1
    stats = small.stats()
    assert (stats.pending, stats.dropped, stats.write_failures) == (1, 1, 3)
    store.down = False
    assert await small.flush() == 0
    assert stored_summaries(memory) == ["question 1", "question 3"]


async def test_a_spill_file_that_cannot_be_read_never_makes_stats_or_flush_raise(
    memory: EpisodicMemory,
) -> None:
    # Every read of this file fails with EIO, as a file on a failing disk does.
    unreadable = Path("/proc/self/mem")
    with pytest.raises(OSError, match="Input/output error"), unreadable.open("rb") as fh:
        fh.readline()
    recorder = EpisodeRecorder(memory, spill_path=unreadable)
    assert await recorder.record(**recorder_episode(1)) is not None
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.spilled) == (1, 0, 0)
    assert "Input/output error" in (stats.last_error or "")
    assert await recorder.flush() == 0
    assert await recorder.aclose() == 0
    assert stored_summaries(memory) == ["question 1"]


# -- an episode is counted once, and never written again from the spill file ------------


async def test_stored_spilled_episodes_are_counted_once_when_the_spill_file_is_read_only(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, spill_disk: Path
) -> None:
    spill = spill_disk / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    await recorder.record(**recorder_episode(1))
    await recorder.record(**recorder_episode(2))  # question 1 is spilled
    remount(spill_disk, "ro")
    store.down = False
    # Both are stored; the spill file cannot be rewritten, but nothing waits any more.
    assert await recorder.flush() == 0
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.spilled) == (2, 0, 0)
    assert "Read-only" in (stats.last_error or "")
    remount(spill_disk, "rw")
    await recorder.record(**recorder_episode(3))
    assert await recorder.flush() == 0
    assert recorder.stats().recorded == 3
    assert not spill.exists()
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]


async def test_a_forgotten_episode_does_not_come_back_from_a_read_only_spill_file(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, spill_disk: Path
) -> None:
    spill = spill_disk / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    await recorder.record(**recorder_episode(1))
    await recorder.record(**recorder_episode(2))  # question 1 is spilled
    remount(spill_disk, "ro")
    store.down = False
    await recorder.flush()
    # The user clears the conversation (LangChain's classic memory flushes, then forgets).
    await memory.forget(user_id="u1", agent_id="support", conversation_id="c1")
    remount(spill_disk, "rw")
    await recorder.record(**recorder_episode(3, conversation_id="c2"))
    assert await recorder.flush() == 0
    assert stored_summaries(memory) == ["question 3"]
    assert recorder.stats().recorded == 3
    assert not spill.exists()


async def test_a_spilled_episode_the_store_refuses_is_counted_once(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, spill_disk: Path
) -> None:
    taken = "7c1f4e0a-5d6b-4a8e-9f3c-2b1a0e9d8c7b"
    await memory.memorize(
        **recorder_episode(0, user_id="u2", point_id=taken)
    )  # another user's point
    spill = spill_disk / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    await recorder.record(**recorder_episode(1, point_id=taken))  # refused once the store is back
    await recorder.record(**recorder_episode(2))  # question 1 is spilled
    remount(spill_disk, "ro")
    store.down = False
    assert await recorder.flush() == 0
    assert (recorder.stats().recorded, recorder.stats().rejected) == (1, 1)
    remount(spill_disk, "rw")
    assert await recorder.flush() == 0
    assert (recorder.stats().recorded, recorder.stats().rejected) == (1, 1)
    assert not spill.exists()
    assert stored_summaries(memory) == ["question 2"]
    assert stored_summaries(memory, "u2") == ["question 0"]
