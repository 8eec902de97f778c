"""An episode spilled to the recorder's file is never lost to a torn line before it.

The recorder appends episodes it cannot keep in its queue to a spill file, one JSON line each.
A line torn by a crash mid-append, or by a write cut short (a full disk, a file size limit),
was left without its newline, so the next spilled episode was appended onto the same line:
reading the file back skipped the whole line, and that episode, reported as spilled, was lost.
A failed append is now taken back, and an append after a torn line starts a line of its own.
"""

from __future__ import annotations

import json
import resource
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import StoreDown, recorder_episode, stored_summaries


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _episode(n: int) -> dict[str, Any]:
    return recorder_episode(
        n, long_summary=f"User asked question {n}; the agent answered it. " + "x" * 400
    )


def _down_recorder(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[Path, StoreDown, EpisodeRecorder]:
    """A recorder that keeps one episode in RAM and spills the rest, over a store that is down."""
    spill = tmp_path / "pending.jsonl"
    store = StoreDown.put_in(memory, monkeypatch)
    return spill, store, EpisodeRecorder(memory, max_pending=1, spill_path=spill)


async def test_an_episode_spilled_after_a_torn_line_comes_back(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill, store, recorder = _down_recorder(memory, monkeypatch, tmp_path)
    spill.write_text('{"short_summary": "torn')  # a crash cut the last append short
    await recorder.record(**_episode(1))  # the write fails: question 1 is spilled
    await recorder.record(**_episode(2))
    torn, first, second = spill.read_text().splitlines()
    assert torn == '{"short_summary": "torn'
    assert json.loads(first)["short_summary"] == "question 1"
    assert json.loads(second)["short_summary"] == "question 2"
    store.down = False
    assert await recorder.flush() == 0
    assert stored_summaries(memory) == ["question 1", "question 2"]


async def test_an_append_cut_short_is_taken_back(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill, store, recorder = _down_recorder(memory, monkeypatch, tmp_path)
    await recorder.record(**_episode(1))
    await recorder.record(**_episode(2))  # questions 1 and 2 spilled whole
    size = spill.stat().st_size
    # A file size limit 100 bytes above the file: the next append is cut short (EFBIG), as a
    # full disk cuts it. The engine is in RAM, so nothing else of this test writes a file.
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, hard))
    try:
        await recorder.record(**_episode(3))  # question 3 cannot be spilled: kept in RAM
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous_handler)
    assert (recorder.stats().dropped, recorder.stats().pending) == (0, 3)
    lines = spill.read_bytes().split(b"\n")
    spilled = [json.loads(line)["short_summary"] for line in lines if line]
    assert spilled == ["question 1", "question 2"]
    await recorder.record(**_episode(4))  # questions 3 and 4 spilled, on lines of their own
    lines = spill.read_bytes().split(b"\n")
    assert [json.loads(line)["short_summary"] for line in lines if line] == [
        "question 1",
        "question 2",
        "question 3",
        "question 4",
    ]
    store.down = False
    assert await recorder.flush() == 0
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3", "question 4"]
