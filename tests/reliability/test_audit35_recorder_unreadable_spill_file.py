"""A spill file holding episodes that cannot be read is never reported as nothing pending.

A recorder made on the spill file a killed process left (a restart) that cannot read it (its
permissions, a failing disk) cannot write its episodes. `stats()` counted the file's episodes
as it last read them, and a recorder that never read it counted none: `flush()` and `aclose()`
returned 0, "everything stored", while the turns of the killed process waited in the file.
Now a file that cannot be read and is not empty counts as one episode waiting until it can be
read (`last_error` says why), so `flush()` and `aclose()` report that something still waits.

The file is made unreadable by an injected `PermissionError` on every way the recorder opens
it (the tests may run as root, which reads any file whatever its permissions).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import StoreDown, recorder_episode


def _unreadable(spill: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every open and read of `spill` fails as a file without read permission does."""
    denied = PermissionError(13, "Permission denied", str(spill))
    path_open, read_bytes, os_open = Path.open, Path.read_bytes, os.open

    def opened(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == spill:
            raise denied
        return path_open(self, *args, **kwargs)

    def read(self: Path) -> bytes:
        if self == spill:
            raise denied
        return read_bytes(self)

    def low_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path) == spill:
            raise denied
        return os_open(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", opened)
    monkeypatch.setattr(Path, "read_bytes", read)
    monkeypatch.setattr(os, "open", low_open)


async def test_a_spill_file_that_cannot_be_read_is_not_reported_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spill = tmp_path / "pending.jsonl"
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        with monkeypatch.context() as down:
            StoreDown.put_in(memory, down)
            recorder = EpisodeRecorder(memory, spill_path=spill)
            assert await recorder.record(**recorder_episode(1)) is None
            assert recorder.stats().spilled == 1
    finally:
        memory.close()
    # A restart: a new recorder on the file the last process left, which it cannot read.
    with monkeypatch.context() as denied:
        _unreadable(spill, denied)
        async with EpisodicMemory(
            location=":memory:", embedder=HashEmbedder(), splade=False
        ) as restarted:
            recorder = EpisodeRecorder(restarted, spill_path=spill)
            assert await recorder.flush() == 1
            stats = recorder.stats()
            assert (stats.pending, stats.spilled) == (1, 1)
            assert "Permission denied" in str(stats.last_error)
            assert await recorder.aclose() == 1
    # Readable again, the episode is there to be written.
    back = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        assert await EpisodeRecorder(back, spill_path=spill).flush() == 0
        stored = back.store.read_recent(10, user_id="u1", agent_id="support")
        assert [row["short_summary_text"] for row in stored] == ["question 1"]
    finally:
        back.close()
