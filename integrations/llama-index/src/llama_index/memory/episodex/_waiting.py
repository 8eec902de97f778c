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


def _readable(entry: object) -> tuple[dict[str, Any], list[Any]] | None:
    """An entry as `(entry with its readable messages, unreadable messages)`; None if no entry."""
    if not isinstance(entry, dict):
        return None
    fields: dict[str, Any] = {k: entry.get(k) for k in _KEY_FIELDS}  # pyright: ignore[reportUnknownMemberType]
    messages: object = entry.get("messages")  # pyright: ignore[reportUnknownMemberType]
    if not all(isinstance(v, str) for v in fields.values()) or not isinstance(messages, list):
        return None
    kept: list[Any] = []
    unreadable: list[Any] = []
    for message in messages:  # pyright: ignore[reportUnknownVariableType]
        try:
            ChatMessage.model_validate(message)
        except (ValueError, TypeError):
            unreadable.append(message)
        else:
            kept.append(message)
    return {**fields, "messages": kept}, unreadable


class WaitingFile:
    """Per user, agent and session: the messages waiting to be recorded, in a JSON file.

    Every method does file I/O: call it in a worker thread. `load` raises `OSError` or
    `ValueError` when the file cannot be read; `save` raises them when it cannot be written
    (the file is then as it was). What of a file damaged by something else cannot be read
    (the whole file, an entry, a message) is moved to `<name>.torn` and logged, never dropped:
    overwritten by the next save, the messages in it were lost for good. Every readable entry
    and message is kept.
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
            entries = self._read(strict=False)
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
                entries = [
                    e for e in self._read(strict=True) if tuple(e[k] for k in _KEY_FIELDS) != key
                ]
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

    def _read(self, *, strict: bool) -> list[dict[str, Any]]:
        """The readable entries, each with its readable messages; the rest set aside.

        Args:
            strict: Raise `OSError` when what cannot be read cannot be set aside (a save,
                which would overwrite it); else log it and leave the file as it is.
        """
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        found: object = data.get("sessions") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(found, list):
            # Written whole by a rename, so never torn: damaged by something else.
            self._set_aside([text], [], strict=strict)
            return []
        entries: list[dict[str, Any]] = []
        aside: list[bytes] = []
        for entry in found:  # pyright: ignore[reportUnknownVariableType]
            readable = _readable(entry)
            if readable is None:
                aside.append(json.dumps(entry, ensure_ascii=True).encode())
                continue
            kept, unreadable = readable
            if unreadable:
                aside.append(json.dumps({**kept, "messages": unreadable}).encode())
            if kept["messages"]:
                entries.append(kept)
        if aside:
            self._set_aside(aside, entries, strict=strict)
        return entries

    def _set_aside(
        self, parts: list[bytes], entries: list[dict[str, Any]], *, strict: bool
    ) -> None:
        """Append `parts` to `<name>.torn`, then make `entries` the file: nothing is dropped.

        In that order, a process killed in between leaves them in both files (set aside again
        at the next read), never in neither.
        """
        side = self.path.with_name(self.path.name + ".torn")
        try:
            with side.open("ab") as fh:
                for part in parts:
                    fh.write(part + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            self._write(entries)
        except OSError:
            if strict:
                raise
            logger.exception(
                "%s holds %d unreadable part(s) of waiting messages that could not be moved to "
                "%s: left in place",
                self.path,
                len(parts),
                side,
            )
            return
        logger.error(
            "%s held %d unreadable part(s) of waiting messages (damaged by something else): "
            "moved to %s, the readable ones kept",
            self.path,
            len(parts),
            side,
        )

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
