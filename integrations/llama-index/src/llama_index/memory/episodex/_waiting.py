"""`WaitingFile`: the messages a block holds for a session it cannot record yet, on disk.

While the store cannot be read, a block cannot place a session it has not seen (`_resume`),
so the messages leaving short-term memory wait in the block. They have left `Memory` (and
its database) already: kept in the process only, a killed process lost them, though every
recorded episode survives a kill in the recorder's spill file. With a spill file, they wait
beside it too (`<spill file>.waiting.json`, one entry per user, agent and session), written
whole and fsync'ed, under a lock file that processes sharing it take in turn; the next block
on it takes them up when it places the session. So do the messages a placed session holds
back (flushed, the rest of their exchange still in short-term memory), until recorded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, processes do not share a file there
    fcntl = None

__all__ = ["WaitingFile", "waiting_path"]

logger = logging.getLogger(__name__)

_KEY_FIELDS = ("user_id", "agent_id", "conversation_id")

Key = tuple[str, str, str]
"""User id, agent id and session."""


def waiting_path(spill_path: Path) -> Path:
    """The waiting file kept beside a spill file."""
    return spill_path.with_name(spill_path.name + ".waiting.json")


class WaitingFile:
    """Per user, agent and session: the messages waiting to be recorded, in a JSON file.

    Every method does file I/O: call it in a worker thread. `load` raises `OSError` or
    `ValueError` when the file cannot be read; `save` raises them when it cannot be written
    (the file is then as it was). A file damaged by something else is logged and read as
    empty.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._guard = threading.Lock()
        # Per session: the version last saved. A turn's save that finishes after a later
        # turn's is older than what the file holds, and skipped.
        self._saved: dict[Key, int] = {}

    def load(self, key: Key) -> list[ChatMessage]:
        """The messages waiting for `key`, oldest first."""
        with self._guard, self._locked():
            entries = self._read()
        for entry in entries:
            if tuple(entry[k] for k in _KEY_FIELDS) == key:
                return [ChatMessage.model_validate(m) for m in entry["messages"]]
        return []

    def save(self, key: Key, messages: list[ChatMessage], version: int) -> None:
        """Make `messages` what waits for `key` (none: no entry), unless a later version was."""
        lines = [m.model_dump(mode="json") for m in messages]
        with self._guard:
            if version <= self._saved.get(key, -1):
                return
            with self._locked():
                entries = [e for e in self._read() if tuple(e[k] for k in _KEY_FIELDS) != key]
                if lines:
                    user, agent, conversation = key
                    entries.append(
                        {
                            "user_id": user,
                            "agent_id": agent,
                            "conversation_id": conversation,
                            "messages": lines,
                        }
                    )
                self._write(entries)
            self._saved[key] = version

    def _read(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        entries: object = data.get("sessions") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(entries, list):
            # Written whole by a rename, so never torn: damaged by something else. What it
            # held cannot be taken up; the next save replaces it.
            logger.error("%s is not a file of waiting messages: ignored", self.path)
            return []
        return [
            e  # pyright: ignore[reportUnknownVariableType]
            for e in entries  # pyright: ignore[reportUnknownVariableType]
            if isinstance(e, dict)
            and all(isinstance(e.get(k), str) for k in _KEY_FIELDS)  # pyright: ignore[reportUnknownMemberType]
            and isinstance(e.get("messages"), list)  # pyright: ignore[reportUnknownMemberType]
        ]

    def _write(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            self.path.unlink(missing_ok=True)
            return
        data = json.dumps({"sessions": entries}, ensure_ascii=True).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        # The rename itself must survive a crash: sync the folder.
        with contextlib.suppress(OSError):
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)

    @contextlib.contextmanager
    def _locked(self) -> Generator[None]:
        """Hold the lock file beside it: processes sharing the file read and rewrite in turn."""
        fd = -1
        if fcntl is not None:
            lock_path = self.path.with_name(self.path.name + ".lock")
            with contextlib.suppress(OSError):
                self.path.parent.mkdir(parents=True, exist_ok=True)
            # A lock file that cannot be opened (a read-only folder, where nothing can be
            # rewritten either) is done without, as the recorder does.
            for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
                try:
                    fd = os.open(lock_path, flags, 0o644)
                    break
                except OSError:
                    continue
        try:
            if fd >= 0 and fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            if fd >= 0:
                os.close(fd)  # closing the descriptor releases the flock
