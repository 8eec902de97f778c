"""Closing the last memory on a folder while another thread opens it: the open waits, then works.

Every `EpisodicMemory` on one embedded folder in a process shares one open folder; the last
one to close flushes and closes its shards and then lets the folder's lock go. That close took
the folder out of the process's list of open folders first and let the lock go last, so an
open in another thread between the two (a web server opening a memory per request while an
earlier request closed its own) found no open folder to share, tried to lock the folder again,
and got `StoreLockedError` saying the store was "open in another process" (there was none).

Now an open of a folder waits for a close of that folder under way, and then opens it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex._common import lockfile
from episodex._engines import edge
from episodex.testing import HashEmbedder

U, A = "u", "a"
GUARD = 60  # seconds: only a deadlock guard, never how the threads meet


class _WatchedLock:
    """The registry's lock, saying when the opener thread finds it taken (then waiting on it)."""

    def __init__(self, inner: Any, opener: list[threading.Thread], waiting: threading.Event):
        self.inner = inner
        self.opener = opener
        self.waiting = waiting

    def __enter__(self) -> None:
        if not self.inner.acquire(blocking=False):
            if self.opener and threading.current_thread() is self.opener[0]:
                self.waiting.set()
            self.inner.acquire()

    def __exit__(self, *exc: object) -> None:
        self.inner.release()


def test_an_open_during_the_last_close_of_the_folder_waits_then_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "store"
    first = EpisodicMemory(folder, embedder=HashEmbedder(), splade=False)
    # The closing thread stops just before it lets the folder's lock go, until the opening
    # thread has either failed or is waiting for the close to end.
    at_release = threading.Event()
    go_on = threading.Event()
    opener: list[threading.Thread] = []
    real_release = lockfile.FolderLock.release

    def paused_release(lock: lockfile.FolderLock) -> None:
        if lock.folder == folder and not at_release.is_set():
            at_release.set()
            assert go_on.wait(GUARD), "the opening thread neither failed nor waited"
        real_release(lock)

    monkeypatch.setattr(lockfile.FolderLock, "release", paused_release)
    monkeypatch.setattr(
        edge._OpenFolder,  # pyright: ignore[reportPrivateUsage]
        "_registry_lock",
        _WatchedLock(edge._OpenFolder._registry_lock, opener, go_on),  # pyright: ignore[reportPrivateUsage]
    )

    outcome: list[object] = []

    def open_and_write() -> None:
        try:
            second = EpisodicMemory(folder, embedder=HashEmbedder(), splade=False)
            try:
                second.store.memorize_many(
                    [
                        {
                            "short_summary": "refund",
                            "long_summary": "asked for a refund",
                            "user_id": U,
                            "agent_id": A,
                            "conversation_id": "c",
                        }
                    ]
                )
                outcome.append(second.store.count(user_id=U, agent_id=A))
            finally:
                second.close()
        except Exception as exc:
            outcome.append(exc)
        finally:
            go_on.set()

    closer = threading.Thread(target=first.close)
    closer.start()
    assert at_release.wait(GUARD)
    opener.append(threading.Thread(target=open_and_write))
    opener[0].start()
    opener[0].join(GUARD)
    closer.join(GUARD)
    assert not opener[0].is_alive() and not closer.is_alive()
    assert outcome == [1], f"the open during the close failed: {outcome[0]!r}"
