"""A spill file the recorder cannot read or rewrite never raises out of it, nor stops its writer.

The recorder keeps episodes it cannot hold in RAM in a spill file and rewrites that file once
they are stored. Two failures of that file escaped `record` and `flush`, which adapters call
after the model has answered and which must never raise: a line of bytes that are not UTF-8
(what a crash or a bad disk can leave) raised `UnicodeDecodeError` and held back every spilled
episode, and a disk that had gone read-only (what a file system does after I/O errors) raised
`OSError` once the episodes were stored, and, in deferred mode, ended the background writer.
Now the bad line is skipped like a torn one, and a spill file that cannot be rewritten keeps
its stored episodes until the next flush (taken out then, never stored twice).
"""

from __future__ import annotations

import threading
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


async def test_a_spill_line_that_is_not_utf8_does_not_hold_back_the_others(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill = tmp_path / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    await recorder.record(**recorder_episode(1))
    await recorder.record(**recorder_episode(2))  # question 1 is spilled
    with spill.open("ab") as fh:
        fh.write(b'\xff\xfe{"short_summary": "gar\n')  # bytes a bad disk left
    await recorder.record(**recorder_episode(3))  # question 2 is spilled after it
    store.down = False
    assert await recorder.flush() == 0
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]
    assert not spill.exists()


async def test_a_read_only_spill_disk_never_raises_and_loses_nothing(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, spill_disk: Path
) -> None:
    spill = spill_disk / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    await recorder.record(**recorder_episode(1))
    await recorder.record(**recorder_episode(2))  # question 1 is spilled
    remount(spill_disk, "ro")
    store.down = False
    # Both are stored; the spill file cannot be rewritten, so question 1's line stays there
    # (no longer pending: it is never written again, `test_audit29_recorder_counters.py`).
    assert await recorder.flush() == 0
    assert stored_summaries(memory) == ["question 1", "question 2"]
    assert "Read-only" in (recorder.stats().last_error or "")
    assert await recorder.record(**recorder_episode(3)) is not None
    remount(spill_disk, "rw")
    assert await recorder.flush() == 0
    assert not spill.exists()
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]  # none twice


def _writer_alive() -> bool:
    return any(t.name == "episodex-recorder" and t.is_alive() for t in threading.enumerate())


async def test_the_background_writer_outlives_a_read_only_spill_disk(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, spill_disk: Path
) -> None:
    spill = spill_disk / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill, deferred=True)
    try:
        await recorder.record(**recorder_episode(1))
        await recorder.record(**recorder_episode(2))  # question 1 is spilled
        assert await recorder.flush() == 2  # still down
        remount(spill_disk, "ro")
        store.down = False
        assert await recorder.flush() == 0  # stored; question 1's line stays in the file
        assert _writer_alive()
        assert stored_summaries(memory) == ["question 1", "question 2"]
        remount(spill_disk, "rw")
        await recorder.record(**recorder_episode(3))
        assert await recorder.flush() == 0
        assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]
    finally:
        assert await recorder.aclose() == 0
