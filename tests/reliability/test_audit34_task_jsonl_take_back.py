"""A JSONL task store whose failed append cannot be taken back says so, and writes no more.

An append that failed (the line's write or its `fsync`) cut the file back to its size before
the line and raised a typed error saying nothing was written. When that cut failed too, the
raw `OSError` of `ftruncate` came out instead (outside episodex's error tree), the line (whole
or in part) stayed in the file while the store's index went on without it, and the store's
next append went on after it: a part line then ran into the next record, a bad middle line
that stopped the store from opening again. Such a failure now raises the typed error saying the
change may be in the file, and closes the store, so what the file holds is what the next open
reads: the whole line as stored, or its part as a torn last line set aside.

The operating system cannot be made to fail `fsync` or `ftruncate` on demand: they are
replaced for the failing call.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from episodex import (
    EngineError,
    Episode,
    JSONLTaskStore,
    StorageFullError,
    StoreClosedError,
    Task,
)


def _fail(code: int) -> Callable[..., None]:
    def fail(*_args: object) -> None:
        raise OSError(code, os.strerror(code))

    return fail


async def test_a_failed_fsync_that_cannot_be_taken_back_says_the_line_may_be_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JSONLTaskStore(tmp_path)
    await store.write(Episode(id_="e0", task=Task(instruction="task 0")))
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", _fail(errno.EIO))
        patch.setattr(os, "ftruncate", _fail(errno.EIO))
        with pytest.raises(EngineError) as info:
            await store.write(Episode(id_="e1", task=Task(instruction="task 1")))
    message = str(info.value)
    assert "nothing was written" not in message
    assert "may be in the file" in message and "open" in message
    # No more appends after a line the index does not hold.
    with pytest.raises(StoreClosedError):
        await store.write(Episode(id_="e2", task=Task(instruction="task 2")))
    store.close()
    reopened = JSONLTaskStore(tmp_path)
    # The whole line was left in the file: the next open reads it as stored.
    assert sorted(e.id_ for e in await reopened.read_recent(10)) == ["e0", "e1"]
    assert reopened.torn_lines == []
    reopened.close()


async def test_a_part_line_that_cannot_be_taken_back_is_set_aside_on_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JSONLTaskStore(tmp_path)
    await store.write(Episode(id_="e0", task=Task(instruction="task 0")))
    before = store.path.read_bytes()
    real_write = os.write

    def write_half(fd: int, data: bytes | memoryview) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", write_half)
        patch.setattr(os, "ftruncate", _fail(errno.EIO))
        with pytest.raises(StorageFullError) as info:
            await store.write(Episode(id_="e1", task=Task(instruction="task 1")))
    assert "may be in the file" in str(info.value)
    with pytest.raises(StoreClosedError):
        await store.delete("e0")
    store.close()
    reopened = JSONLTaskStore(tmp_path)
    assert [e.id_ for e in await reopened.read_recent(10)] == ["e0"]
    assert len(reopened.torn_lines) == 1
    assert reopened.path.read_bytes() == before
    reopened.close()


async def test_a_failed_fsync_taken_back_still_says_nothing_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JSONLTaskStore(tmp_path)
    await store.write(Episode(id_="e0", task=Task(instruction="task 0")))
    before = store.path.read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", _fail(errno.EIO))
        with pytest.raises(EngineError, match="nothing was written"):
            await store.write(Episode(id_="e1", task=Task(instruction="task 1")))
    assert store.path.read_bytes() == before
    await store.write(Episode(id_="e2", task=Task(instruction="task 2")))  # still open
    assert await store.count() == 2
    store.close()
