"""A JSONL task store's failures around its file are told truly, and repeat nothing.

A torn last line (a write cut short by a crash) is appended to `<file>.torn` and then cut from
the store file. When the cut failed, the error said "nothing was written" though the side file
had the fragment, and every later open appended the same fragment again. The error now says
where the fragment is, and a fragment already recorded last in the side file is not appended
again.

An append whose file could not be closed (`close` reports a delayed write error on network
file systems) raised the raw `OSError`, outside episodex's error tree, while the line may be
in the file and the index went on without it. It now raises the store's typed error saying
the change may be in the file, and closes the store, so the next open reads what it holds.

The operating system cannot be made to fail `ftruncate` or `close` on demand: they are replaced
for the failing calls.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from episodex import EngineError, Episode, JSONLTaskStore, StoreClosedError, Task


def _fail(code: int) -> Callable[..., None]:
    def fail(*_args: object) -> None:
        raise OSError(code, os.strerror(code))

    return fail


async def _store_with_torn_line(folder: Path) -> tuple[Path, bytes, bytes]:
    """A store file of one episode and a torn last line: its path, whole part and fragment."""
    store = JSONLTaskStore(folder)
    await store.write(Episode(id_="e0", task=Task(instruction="task 0")))
    store.close()
    whole = store.path.read_bytes()
    fragment = b'{"op":"write","episode":{"id_":"e1","ta'
    store.path.write_bytes(whole + fragment)
    return store.path, whole, fragment


async def test_a_torn_line_that_cannot_be_cut_is_said_to_be_in_the_side_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, whole, fragment = await _store_with_torn_line(tmp_path)
    side = path.with_name(path.name + ".torn")
    for _ in range(2):  # every open fails to cut it
        with monkeypatch.context() as patch:
            patch.setattr(os, "ftruncate", _fail(errno.EIO))
            with pytest.raises(EngineError) as info:
                JSONLTaskStore(tmp_path)
        message = str(info.value)
        assert "nothing was written" not in message
        assert str(side) in message and "may still end with it" in message
        assert path.read_bytes() == whole + fragment
        assert side.read_bytes() == fragment + b"\n"  # recorded once
    store = JSONLTaskStore(tmp_path)
    assert [t.text for t in store.torn_lines] == [fragment.decode()]
    assert path.read_bytes() == whole
    assert side.read_bytes() == fragment + b"\n"
    assert [e.id_ for e in await store.read_recent(5)] == ["e0"]
    store.close()


async def test_a_fragment_seen_again_later_is_recorded_again(tmp_path: Path) -> None:
    path, whole, fragment = await _store_with_torn_line(tmp_path)
    side = path.with_name(path.name + ".torn")
    JSONLTaskStore(tmp_path).close()
    # Another torn line after it, then the same fragment again: each crash is recorded.
    other = b'{"op":"delete","id'
    for torn in (other, fragment):
        path.write_bytes(whole + torn)
        JSONLTaskStore(tmp_path).close()
    assert side.read_bytes() == fragment + b"\n" + other + b"\n" + fragment + b"\n"


def _close_then_fail(code: int) -> Callable[[int], None]:
    """`os.close` that closes the first fd it is given and then fails, as NFS does."""
    real_close = os.close
    calls: list[int] = []

    def close(fd: int) -> None:
        real_close(fd)
        if not calls:
            calls.append(fd)
            raise OSError(code, os.strerror(code))

    return close


@pytest.mark.parametrize("write_fails", [False, True], ids=["written", "taken-back"])
async def test_an_append_whose_file_cannot_be_closed_says_the_line_may_be_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, write_fails: bool
) -> None:
    store = JSONLTaskStore(tmp_path)
    await store.write(Episode(id_="e0", task=Task(instruction="task 0")))
    with monkeypatch.context() as patch:
        patch.setattr(os, "close", _close_then_fail(errno.EIO))
        if write_fails:
            patch.setattr(os, "fsync", _fail(errno.EIO))
        with pytest.raises(EngineError) as info:
            await store.write(Episode(id_="e1", task=Task(instruction="task 1")))
    message = str(info.value)
    assert "nothing was written" not in message
    assert "may be in the file" in message and "open it again" in message
    with pytest.raises(StoreClosedError):  # no more appends after what the index lacks
        await store.write(Episode(id_="e2", task=Task(instruction="task 2")))
    store.close()
    reopened = JSONLTaskStore(tmp_path)
    expected = ["e0"] if write_fails else ["e0", "e1"]
    assert sorted(e.id_ for e in await reopened.read_recent(5)) == expected
    assert reopened.torn_lines == []
    reopened.close()
