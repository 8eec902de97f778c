"""`EpisodeRecorder`: writes episodes for a framework adapter so a failure never costs the answer.

An adapter records an exchange after the model has answered. If the store fails then (a
server restart, a full disk, a lock held by another process), raising would throw away an
answer the user already paid for, and dropping the episode would lose the turn. The recorder
does neither: the episode is validated at once (a bad episode is a bug, logged and counted,
never retried), given its point id and timestamps, and kept in a bounded queue that is written
before the next episode and on `flush()`. Because the id is fixed before the first try, a
retry after a write that failed late (the point was stored, the answer was lost) replaces that
point instead of storing the exchange twice.

With `spill_path`, that file is a write-ahead log: each episode is appended to it (one JSON
line, fsync'ed) when it is recorded, before any write is tried, and taken out once the store
has it. A long outage loses nothing, nor a process killed at any moment (the OOM killer, a
deploy, never closed): the next recorder on that file writes what it left, each episode once
(one the store already had is replaced under its id). Recorders sharing the file, in one
process or several, take turns on it through a lock file beside it (`<name>.lock`), and
their writes (and forgets) take turns through another (`<name>.write.lock`). An
episode the file cannot take (a full disk) waits in memory, as without a spill file, where
beyond `max_pending` the oldest is dropped, counted and logged. With `deferred=True`, `record` only queues and a
background thread writes, so a request never waits for embedding; `flush()` drains it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import threading
import uuid
from collections import Counter, deque
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from episodex._common.errors import ConfigurationError, EngineError, ValidationError
from episodex._common.files import atomic_write
from episodex._common.validation import read_json, require_bool, require_id, require_int
from episodex._episodes.model import ConversationEpisode

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, recorders do not share a file there
    fcntl = None

if TYPE_CHECKING:
    from episodex._episodes.memory import EpisodicMemory

__all__ = ["EpisodeRecorder", "RecorderStats"]

logger = logging.getLogger("episodex.recorder")


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """What an `EpisodeRecorder` has done since it was made: its health at a glance."""

    recorded: int
    """Episodes stored."""
    pending: int
    """Episodes waiting to be written (in memory and in the spill file)."""
    spilled: int
    """Of `pending`, how many wait in the spill file."""
    write_failures: int
    """Write attempts that failed (each leaves its episodes pending)."""
    rejected: int
    """Episodes refused as invalid (logged; never retried)."""
    dropped: int
    """Pending episodes dropped because the queue was full and there is no spill file."""
    recall_failures: int
    """Recalls that failed and were skipped by an adapter (`note_recall_failure`)."""
    last_error: str | None
    """The last write or recall error, as `Type: message`."""


def _spill_line(episode: ConversationEpisode) -> str:
    """An episode as one line of the spill file."""
    return json.dumps(episode.model_dump(mode="json"), ensure_ascii=True) + "\n"


def _spill_file(spill_path: object) -> Path | None:
    """`spill_path` as a path (`ConfigurationError` for a value that is not a path, or blank).

    Checked when the recorder is made: a number (a bare `TypeError` before) or a blank path
    (the current folder, where no episode can wait) is a mistake, never a file. A folder in
    the file's place is still taken: it may be made after the recorder, so every spill
    handles it (the episodes wait in memory, and `stats().last_error` says why).
    """
    if spill_path is None:
        return None
    text = spill_path if isinstance(spill_path, str) else None
    if isinstance(spill_path, os.PathLike):
        named = os.fspath(cast("os.PathLike[Any]", spill_path))
        text = named if isinstance(named, str) else None
    if text is None:
        raise ConfigurationError(
            f"spill_path must be a file path (str or os.PathLike), got {type(spill_path).__name__}"
        )
    if not text.strip():
        raise ConfigurationError("spill_path must name a file, got a blank path")
    return Path(text)


class EpisodeRecorder:
    """Records episodes without ever raising: failed writes are queued and retried.

    Example:
        ```python
        import asyncio
        from episodex import EpisodeRecorder, EpisodicMemory

        async def main():
            async with EpisodicMemory(location=":memory:") as memory:
                recorder = EpisodeRecorder(memory)
                await recorder.record(short_summary="Asked for a refund",
                                      long_summary="User: refund? Assistant: done.",
                                      user_id="u1", agent_id="support", conversation_id="c1")
                await recorder.flush()
                assert recorder.stats().recorded == 1

        asyncio.run(main())
        ```

    Args:
        memory: The memory to write to.
        max_pending: Most episodes kept in memory while the store fails.
        spill_path: A JSONL file every episode is appended to when it is recorded and taken
            out of once stored, so the episodes waiting (the store failing, or a write under
            way) survive a restart or a killed process (a new recorder on it writes them);
            None keeps them in memory only, dropping the oldest beyond `max_pending`.
        deferred: Write in a background thread; `record` returns at once.
        on_written_later: Called with the episodes a write stored, in the order they were
            recorded, when some of them were stored later than their `record` call (the
            store had failed, the write was deferred, or a previous recorder on the spill
            file left them): what an adapter would have done once they were stored (a
            LangGraph fork forgetting the branch it left) is done then, right after they
            are stored and before the next write. Runs in the writing thread; what it
            raises is logged, never raised.
    """

    def __init__(
        self,
        memory: EpisodicMemory,
        *,
        max_pending: int = 1000,
        spill_path: str | os.PathLike[str] | None = None,
        deferred: bool = False,
        on_written_later: Callable[[Sequence[ConversationEpisode]], None] | None = None,
    ) -> None:
        self.memory = memory
        if on_written_later is not None and not callable(on_written_later):
            # Found at the first late write, it would only be logged: checked now.
            raise ConfigurationError(
                "on_written_later must be a function or None, "
                f"got {type(on_written_later).__name__}"
            )
        self.on_written_later = on_written_later
        self.max_pending = require_int(
            "max_pending", max_pending, minimum=1, error=ConfigurationError
        )
        self.spill_path = _spill_file(spill_path)
        self.deferred = require_bool("deferred", deferred, error=ConfigurationError)
        self._pending: deque[ConversationEpisode] = deque()
        self._lock = threading.Lock()  # guards the queue, the spill file and the counters
        self._write_lock = threading.Lock()  # one writer at a time keeps the order
        self._counts = {"recorded": 0, "write_failures": 0, "rejected": 0, "dropped": 0}
        self._recall_failures = 0
        self._last_error: str | None = None
        # The spill file's episodes (their ids) when it was last readable.
        self._spilled_seen: set[str | None] = set()
        # Spilled episodes stored (or refused) whose lines a failed rewrite left in the file,
        # as their lines (the version, not only the id): never written, counted or reported
        # pending again.
        self._settled: set[str] = set()
        # The ids of episodes `record` calls wait to hear about (how many calls wait for each)
        # and, by id, the episodes of those ids stored since: another call's write may store
        # a call's episode before it writes.
        self._awaited: dict[str, int] = {}
        self._stored_awaited: dict[str, list[ConversationEpisode]] = {}
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._worker: threading.Thread | None = None
        if self.deferred:
            self._worker = threading.Thread(
                target=self._run_worker, name="episodex-recorder", daemon=True
            )
            self._worker.start()

    # -- recording -----------------------------------------------------------------------

    async def record(self, **episode: Any) -> str | None:
        """Queue one episode and write everything pending; never raises for store failures.

        Takes the keyword arguments of `EpisodicMemory.memorize`. Returns the point id once
        the episode is stored, or None while it waits (deferred, or the store failed) or when
        it was rejected as invalid.
        """
        return (await self.record_many([episode]))[0]

    async def record_many(self, episodes: Sequence[Mapping[str, Any]]) -> list[str | None]:
        """Queue several episodes together, then write everything pending.

        For the episodes of one span: all are queued before the first write, so a caller
        cancelled while this runs (a timeout) has queued all of them, never some, and can
        count the span as recorded. Returns each episode's point id as `record` does.
        """
        parsed = [self._prepare(episode) for episode in episodes]
        ids = [episode.point_id for episode in parsed if episode is not None and episode.point_id]
        valid = [episode for episode in parsed if episode is not None]
        if valid and self.spill_path is not None:
            # The spill file's append (an fsync, and a file lock another process may hold)
            # runs in a worker thread, never on the event loop that serves other users. It is
            # shielded: a caller cancelled meanwhile has still queued all of its episodes, and
            # the count of this call's awaited ids is taken back when the queueing is done.
            queued = asyncio.ensure_future(asyncio.to_thread(self._queue, valid, ids))
            try:
                write_now = await asyncio.shield(queued)
            except asyncio.CancelledError:
                queued.add_done_callback(lambda done: self._queued_for_nobody(done, ids))
                raise
        else:
            write_now = self._queue(valid, ids)
        if not write_now:
            self._idle.clear()
            self._wake.set()
            return [None] * len(parsed)
        try:
            await self._write_pending()
        finally:
            with self._lock:
                # Stored by this call's write, or by another call's that took them along.
                stored = [
                    ep is not None and ep in self._stored_awaited.get(ep.point_id or "", ())
                    for ep in parsed
                ]
                self._release_locked(ids)
        return [
            ep.point_id if ep is not None and was_stored else None
            for ep, was_stored in zip(parsed, stored, strict=True)
        ]

    def _queue(self, valid: list[ConversationEpisode], ids: list[str]) -> bool:
        """Queue `valid` (into the spill file first, if any); True if the caller writes now.

        When the caller writes now, its `ids` are counted as awaited (`_release_locked`
        takes the count back).
        """
        with self._lock:
            # Into the spill file before any write is tried: a process killed while the write
            # runs (or before the background writer gets to it) leaves it for the next
            # recorder. Those the file could not take wait in memory, and the later ones
            # behind them (the file is written before memory: the order holds).
            if valid and self.spill_path is not None:
                self._spill_pending_locked()
                if not self._pending and self._spill(valid):
                    valid = []
            self._pending.extend(valid)
            # Not deferred, or closed: the writer thread is stopping or gone, so waiting for
            # it would leave these episodes unwritten (and `flush` waiting forever).
            write_now = not self.deferred or self._closed
            if write_now:
                for point_id in ids:
                    self._awaited[point_id] = self._awaited.get(point_id, 0) + 1
            else:
                # The background writer may be slow or failing: the bound holds at once.
                # Otherwise the write below comes first, and only what the store could not
                # take then is spilled or dropped (a working store loses nothing).
                self._trim_locked()
            return write_now

    def _queued_for_nobody(self, done: asyncio.Future[bool], ids: list[str]) -> None:
        """A cancelled caller's queueing finished: nobody awaits its ids' write any more."""
        if done.cancelled() or done.exception() is not None or not done.result():
            return
        with self._lock:
            self._release_locked(ids)

    def _release_locked(self, ids: list[str]) -> None:
        for point_id in ids:
            left = self._awaited[point_id] - 1
            if left:
                self._awaited[point_id] = left
            else:
                del self._awaited[point_id]
                self._stored_awaited.pop(point_id, None)

    def note_recall_failure(self, exc: BaseException) -> None:
        """Count a recall an adapter skipped because it failed (and remember the error)."""
        with self._lock:
            self._recall_failures += 1
            self._last_error = f"{type(exc).__name__}: {exc}"

    async def flush(self) -> int:
        """Write everything pending now, waiting for the background writer.

        Returns how many episodes are still pending because the store is still failing.
        """
        if self.deferred:
            self._wake.set()
            await asyncio.to_thread(self._wait_for_writer)
        await self._write_pending()
        return self.stats().pending

    async def forget(
        self, *, user_id: str, agent_id: str, conversation_id: str | None = None
    ) -> int:
        """Forget this user and agent's episodes (one conversation's if given), stored and waiting.

        The memory's `forget`, and the episodes waiting to be written (in memory and in the
        spill file) taken out: written later, they would bring back what was forgotten. No
        write of this recorder runs in between. Returns how many episodes were forgotten.

        Raises:
            ValidationError: An id is missing or not a string; nothing is forgotten.
            EngineError: The store failed (nothing is forgotten), or the spill file could not
                be rewritten (the stored episodes are forgotten, the waiting ones still wait:
                call it again).
        """
        user_id = require_id("user_id", user_id)
        agent_id = require_id("agent_id", agent_id)
        if conversation_id is not None:
            conversation_id = require_id("conversation_id", conversation_id)
        return await asyncio.to_thread(self._forget_blocking, user_id, agent_id, conversation_id)

    def _forget_blocking(self, user_id: str, agent_id: str, conversation_id: str | None) -> int:
        def forgotten(episode: ConversationEpisode) -> bool:
            return (
                episode.user_id == user_id
                and episode.agent_id == agent_id
                and conversation_id in (None, episode.conversation_id)
            )

        with self._writing():
            if conversation_id is None:
                stored = self.memory.store.forget(
                    user_id=user_id, agent_id=agent_id, everything=True
                )
            else:
                stored = self.memory.store.forget(
                    user_id=user_id, agent_id=agent_id, conversation_id=conversation_id
                )
            try:
                waiting = self._drop_waiting(forgotten)
            except OSError as exc:
                raise EngineError(
                    f"forgot {stored} stored episode(s), but the waiting ones could not "
                    f"be taken out of the spill file {self.spill_path} ({exc}); they "
                    "would be written again: call forget again"
                ) from exc
        return stored + waiting

    async def forget_waiting(self, where: Callable[[ConversationEpisode], bool]) -> int:
        """Take the waiting episodes `where` accepts out of the recorder, never to be written.

        The episodes not yet stored (the store failing, or the background writer not there
        yet), in memory and in the spill file: those of something that no longer happened
        (a LangGraph thread forked back to an earlier point) that a later write would store.
        No write of this recorder runs meanwhile: once this returns, each of them is either
        taken out or was stored before it began. Stored episodes are not touched (the
        memory's `forget` does that). Returns how many waiting episodes were taken out, each
        once however many of its versions waited.

        Raises:
            ValidationError: `where` is not a function; nothing is taken out.
            EngineError: The spill file could not be rewritten; nothing is taken out (call
                it again).
        """
        if not callable(where):
            raise ValidationError(f"where must be a function, got {type(where).__name__}")
        return await asyncio.to_thread(self._forget_waiting_blocking, where)

    def _forget_waiting_blocking(self, where: Callable[[ConversationEpisode], bool]) -> int:
        with self._writing():
            try:
                return self._drop_waiting(where)
            except OSError as exc:
                raise EngineError(
                    f"the waiting episodes could not be taken out of the spill file "
                    f"{self.spill_path} ({exc}); they would be written: call it again"
                ) from exc

    def _drop_waiting(self, where: Callable[[ConversationEpisode], bool]) -> int:
        """Take the waiting episodes `where` accepts out; holds `_write_lock`.

        Out of the spill file first: if it cannot be rewritten (`OSError`), nothing is
        taken out, those in memory neither.
        """
        with self._lock, self._spill_file_lock():
            queue: deque[ConversationEpisode] = deque()
            # An episode recorded again under its id waits as several versions (queued, in
            # the file, or both): each taken out is one episode, counted once.
            dropped: set[str | None] = set()
            for episode in self._pending:
                if where(episode):
                    dropped.add(episode.point_id)
                else:
                    queue.append(episode)
            if self.spill_path is not None and self.spill_path.exists():
                spilled = [ep for ep in self._take_spilled() if not self._is_settled(ep)]
                left: list[ConversationEpisode] = []
                for episode in spilled:
                    if where(episode):
                        dropped.add(episode.point_id)
                    else:
                        left.append(episode)
                if len(left) < len(spilled):
                    self._write_spilled_locked(left)
                    self._settled.clear()
            self._pending = queue
        return len(dropped)

    def stats(self) -> RecorderStats:
        """Counters and the queue's size: the recorder's health."""
        with self._lock:
            spilled = self._spilled_ids()
            # An episode recorded again under its id waits as several versions (queued, in
            # the file, or both): one episode, counted once.
            queued = {episode.point_id for episode in self._pending}
            return RecorderStats(
                recorded=self._counts["recorded"],
                pending=len(queued | spilled),
                spilled=len(spilled),
                write_failures=self._counts["write_failures"],
                rejected=self._counts["rejected"],
                dropped=self._counts["dropped"],
                recall_failures=self._recall_failures,
                last_error=self._last_error,
            )

    async def aclose(self) -> int:
        """Stop the background writer, then write everything pending.

        Every episode recorded before this returns is written by it, or (recorded after the
        writer stopped) by its own `record` call. Returns how many episodes are still pending
        because the store is failing.
        """
        with self._lock:
            # Marked under the lock `record_many` queues with and the writer stops with: an
            # episode queued before the mark is left for the final write below, and one
            # queued after it is written by its own call, so none waits for a stopped writer.
            self._closed = True
        self._wake.set()
        if self._worker is not None:
            await asyncio.to_thread(self._worker.join, 5.0)
        return await self.flush()

    # -- internals -----------------------------------------------------------------------

    def _wait_for_writer(self) -> None:
        # Until the background writer is idle, or gone (after `aclose`); `flush` then writes
        # what is pending itself.
        worker = self._worker
        while worker is not None and worker.is_alive():
            if self._idle.wait(0.05):
                return

    def _prepare(self, episode: Mapping[str, Any]) -> ConversationEpisode | None:
        now = datetime.now(UTC)
        data = dict(episode)
        # Fixed before the first try: a retry replaces instead of duplicating, and the episode
        # keeps the time it happened, not the time the store came back. An explicit None (the
        # default of `memorize`) gets one too: the store would pick an id the queue never
        # learns, so the episode would stay pending and be stored again on every write.
        if data.get("point_id") is None:
            data["point_id"] = str(uuid.uuid4())
        if data.get("timestamp_begin") is None:
            data["timestamp_begin"] = now
        if data.get("timestamp_end") is None:
            data["timestamp_end"] = data["timestamp_begin"]
        try:
            return ConversationEpisode.parse(data)
        except ValidationError as exc:
            logger.error("episode rejected, not recorded: %s", exc)
            with self._lock:
                self._counts["rejected"] += 1
                self._last_error = f"{type(exc).__name__}: {exc}"
            return None

    def _trim_locked(self) -> None:
        """Spill (or drop) the oldest pending episodes beyond `max_pending`; holds `_lock`."""
        while len(self._pending) > self.max_pending:
            oldest = self._pending.popleft()
            if self.spill_path is not None and self._spill([oldest]):
                continue
            self._counts["dropped"] += 1
            logger.error(
                "episode %s dropped: %d episodes are pending and %s",
                oldest.point_id,
                self.max_pending,
                "there is no spill file"
                if self.spill_path is None
                else "the spill file cannot take it",
            )

    def _spill_pending_locked(self) -> None:
        """Move every queued episode, oldest first, into the spill file; holds `_lock`.

        One that cannot be spilled stays queued (with those after it, to keep the order).
        """
        if self.spill_path is None:
            return
        while self._pending:
            if not self._spill([self._pending[0]]):
                return
            self._pending.popleft()

    @contextlib.contextmanager
    def _writing(self) -> Generator[None]:
        """Be the one writer of this recorder and of every recorder on its spill file.

        A write reads every episode waiting in the spill file, stores them, then takes them
        out; a `forget` (or `forget_waiting`) takes them out without storing. Two of those at
        once on one file, by two recorders (in one process or several), undid each other: a
        conversation forgotten while another recorder's write of it ran was stored again by
        that write, and an old version it stored replaced the newer one the other had stored
        meanwhile. So they take turns through a second lock file (`<name>.write.lock`), held
        from reading the file to taking out what was stored; appends (`record`) take only
        the spill file's own lock, and never wait for a write. Taken after `_write_lock` and
        before `_lock`, as every holder of both does; it is never deleted (see
        `_spill_file_lock`).
        """
        with self._write_lock, self._file_lock(".write.lock"):
            yield

    @contextlib.contextmanager
    def _spill_file_lock(self) -> Generator[None]:
        """Hold the spill file's lock file: one recorder at a time reads, appends or rewrites.

        Without it, a recorder rewriting the file (taking out what it stored) could replace
        it just after another recorder, in this process or another, appended an episode,
        and that episode would be gone. A lock file that cannot be opened (a read-only
        folder, where nothing can be appended or rewritten either) is done without.

        The lock file is never deleted. A flock belongs to the open file, not to its name: a
        recorder waiting on the file while another deleted it would get the lock of the
        deleted file, and the next recorder would create a new one and lock that, so both would
        hold "the" lock at once. Deleting would be safe only if every recorder checked, after
        locking, that its file is still the one named (and retried if not); a process running
        an older release, which does not, may share the spill file. An empty file is the price.
        """
        with self._file_lock(".lock"):
            yield

    @contextlib.contextmanager
    def _file_lock(self, suffix: str) -> Generator[None]:
        """Hold the flock of the lock file `<spill file's name><suffix>` (none: nothing held)."""
        fd = -1
        if self.spill_path is not None and fcntl is not None:
            lock_path = self.spill_path.with_name(self.spill_path.name + suffix)
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

    def _spill(self, episodes: Sequence[ConversationEpisode]) -> bool:
        """Append `episodes` to the spill file, all or none; holds `_lock`."""
        assert self.spill_path is not None
        line = "".join(_spill_line(episode) for episode in episodes).encode()
        fd = -1
        try:
            self.spill_path.parent.mkdir(parents=True, exist_ok=True)
            with self._spill_file_lock():
                fd = os.open(self.spill_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                size = os.fstat(fd).st_size
                # After a line a crash cut short, start a new line: appended onto the fragment,
                # this episode would be unreadable too.
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line
                try:
                    view = memoryview(line)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                except OSError:
                    # A full disk or a size limit cut the append short: take the fragment back.
                    os.ftruncate(fd, size)
                    raise
            return True
        except OSError as exc:
            self._last_error = f"{type(exc).__name__}: {exc}"
            logger.error(
                "could not spill episode(s) %s: %s",
                ", ".join(str(episode.point_id) for episode in episodes),
                exc,
            )
            return False
        finally:
            if fd >= 0:
                os.close(fd)

    def _spilled_ids(self) -> set[str | None]:
        """The point ids of the episodes waiting in the spill file; holds `_lock`.

        Never raises: `stats()` and `flush()` run after the model answered. A file that cannot
        be read (an I/O error, a folder in its place) counts as it last did, and the error is
        kept in `last_error`; one never read (a restart on it) that is not empty counts as one
        episode, so `flush()` and `aclose()` never report "nothing waits" while its episodes
        do. A line that cannot be read counts as one episode of its own.
        """
        if self.spill_path is None:
            return set()
        try:
            if not self.spill_path.exists():
                self._spilled_seen = set()
                return set()
            seen: set[str | None] = set()
            with self.spill_path.open("rb") as fh:
                for number, line in enumerate(fh):
                    if line.strip() and not self._settled_line(line):
                        seen.add(self._line_id(line, number))
            self._spilled_seen = seen
        except OSError as exc:
            self._spill_failed_locked("counting", exc)
            if not self._spilled_seen and self._holds_something():
                return {"unreadable spill file"}
        return self._spilled_seen

    def _holds_something(self) -> bool:
        """Whether the spill path is a file that is not empty (True when that is unknown)."""
        assert self.spill_path is not None
        try:
            status = self.spill_path.stat()
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return stat.S_ISREG(status.st_mode) and status.st_size > 0

    @staticmethod
    def _line_id(line: bytes, number: int) -> str:
        # Not a point id (a UUID): a line that cannot be read is an episode of its own.
        unreadable = f"line {number}"
        try:
            data = read_json(line)
        except ValueError:
            return unreadable
        point_id = data.get("point_id") if isinstance(data, dict) else None
        return point_id if isinstance(point_id, str) else unreadable

    def _is_settled(self, episode: ConversationEpisode) -> bool:
        # The same episode, not only the same id: one recorded again under its id (a new
        # version) is written.
        return bool(self._settled) and _spill_line(episode) in self._settled

    def _settled_line(self, line: bytes) -> bool:
        if not self._settled:
            return False
        try:
            return self._is_settled(ConversationEpisode.parse(read_json(line)))
        except (ValueError, ValidationError):
            return False

    def _take_spilled(self) -> list[ConversationEpisode]:
        """The episodes of the spill file; raises `OSError` when the file cannot be read."""
        if self.spill_path is None or not self.spill_path.exists():
            return []
        episodes: list[ConversationEpisode] = []
        # Read as bytes and decoded line by line: one line of bytes that are not UTF-8 (left
        # by a crash or a bad disk) must not hide the lines around it.
        lines = self.spill_path.read_bytes().split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                episodes.append(ConversationEpisode.parse(read_json(line)))
            except (ValueError, ValidationError) as exc:
                # A line torn by a crash mid-append: the rest must still come back.
                logger.error("spill file line %d unreadable, skipped: %s", number, exc)
        return episodes

    def _spill_failed_locked(self, doing: str, exc: OSError) -> None:
        # Called holding `_lock`. The spilled episodes stay in the file for the next write;
        # the caller, who already has the model's answer, never hears of it.
        error = f"{type(exc).__name__}: {exc}"
        if doing == "counting" and error == self._last_error:
            return  # `stats()` may be called after every exchange: logged once, not each time
        self._last_error = error
        logger.error("spill file %s: %s failed, tried again later: %s", self.spill_path, doing, exc)

    async def _write_pending(self) -> set[str]:
        return await asyncio.to_thread(self._write_pending_blocking)

    def _write_pending_blocking(self) -> set[str]:
        with self._writing():
            with self._lock:
                try:
                    spilled = []
                    if self.spill_path is not None and self.spill_path.exists():
                        with self._spill_file_lock():
                            spilled = self._take_spilled()
                except OSError as exc:
                    # Unreadable for now: what is in memory is still written.
                    self._spill_failed_locked("reading", exc)
                    spilled = []
                if self._settled:
                    # Stored before: written again, a forgotten one would come back.
                    spilled = [ep for ep in spilled if not self._is_settled(ep)]
                    self._forget_spilled(Counter(), [])
                batch = [*spilled, *self._pending]
            if not batch:
                return set()
            try:
                return self._write_batch(batch, spilled)
            finally:
                with self._lock:
                    waiting = {ep.point_id for ep in self._pending}
                    if any(ep.point_id in waiting for ep in batch):
                        # Queued episodes the store did not take: into the spill file now,
                        # so a process that ends before the store is back (killed, or
                        # exiting without `aclose`) leaves them for the next recorder on it.
                        self._spill_pending_locked()
                    self._trim_locked()

    def _write_batch(
        self, batch: list[ConversationEpisode], spilled: list[ConversationEpisode]
    ) -> set[str]:
        """Write `batch` (`spilled`, read from the spill file, then queued); the ids stored."""
        try:
            self.memory.store.memorize_many(batch)
        except ValidationError:
            # The store refused an episode it alone can judge (its point_id belongs to
            # another user): kept, it would fail every later batch and hold back every
            # turn after it. Each is written alone: the refused are rejected, the rest
            # stored (or kept, if the store fails meanwhile).
            written, rejected = self._write_each(batch)
        except Exception as exc:  # the store failed: keep everything for the next try
            self._write_failed(exc, len(batch))
            return set()
        else:
            written, rejected = list(batch), list[ConversationEpisode]()
        written_ids = {ep.point_id for ep in written if ep.point_id is not None}
        with self._lock:
            # Stored later than recorded: no `record` call is there to hear of them.
            later = any(ep.point_id not in self._awaited for ep in written)
            self._counts["recorded"] += len(written_ids)
            for episode in written:
                if episode.point_id in self._awaited:
                    self._stored_awaited.setdefault(episode.point_id, []).append(episode)
            # The versions this batch wrote (or the store refused), not every episode of their
            # ids: one recorded again under its id while this write ran (queued or spilled
            # meanwhile) is newer than what the store holds, and is written next.
            done = {id(ep) for ep in [*written, *rejected]}
            from_file = Counter(_spill_line(ep) for ep in spilled if id(ep) in done)
            from_queue = Counter(_spill_line(ep) for ep in batch[len(spilled) :] if id(ep) in done)
            queue: deque[ConversationEpisode] = deque()
            for episode in self._pending:
                line = _spill_line(episode)
                if from_queue[line] > 0:
                    from_queue[line] -= 1
                else:
                    queue.append(episode)
            self._pending = queue
            # Those no longer queued were spilled meanwhile: out of the file too.
            self._forget_spilled(from_file + from_queue, [ep for ep in spilled if id(ep) in done])
        if later and self.on_written_later is not None:
            # Still holding the write lock: done before the next write, as if the episodes
            # had been stored by their own calls.
            try:
                self.on_written_later(written)
            except Exception:
                logger.exception("on_written_later failed; the episodes are stored")
        return written_ids

    def _write_each(
        self, batch: list[ConversationEpisode]
    ) -> tuple[list[ConversationEpisode], list[ConversationEpisode]]:
        """Write episodes one by one; those written and those the store refused."""
        written: list[ConversationEpisode] = []
        rejected: list[ConversationEpisode] = []
        for position, episode in enumerate(batch):
            point_id = episode.point_id or ""  # every queued episode has its id
            try:
                self.memory.store.memorize_many([episode])
            except ValidationError as exc:
                logger.error("episode %s refused by the store, not recorded: %s", point_id, exc)
                rejected.append(episode)
                with self._lock:
                    self._counts["rejected"] += 1
                    self._last_error = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # the store fails now: the rest waits for the next try
                self._write_failed(exc, len(batch) - position)
                break
            else:
                written.append(episode)
        return written, rejected

    def _write_failed(self, exc: Exception, count: int) -> None:
        with self._lock:
            self._counts["write_failures"] += 1
            self._last_error = f"{type(exc).__name__}: {exc}"
        logger.warning("recording %d episode(s) failed; kept for retry: %s", count, exc)

    def _forget_spilled(self, done: Counter[str], settled: list[ConversationEpisode]) -> None:
        """Take out of the spill file the lines `done` (stored or refused) and the settled.

        Holds `_lock`. `done` counts the lines of the versions written (the oldest line of
        each is taken out, as often as counted). `settled` are those of `done` read from the
        file: if it cannot be rewritten, they are remembered as settled, so they are neither
        written nor counted again while their lines stay there.
        """
        if self.spill_path is None:
            return
        try:
            if not self.spill_path.exists():
                self._settled.clear()
                return
            with self._spill_file_lock():
                self._rewrite_spilled_locked(done)
        except OSError as exc:
            # A read-only or full disk: the stored episodes stay in the file until a later
            # flush can rewrite it; until then they are known as settled.
            self._settled.update(_spill_line(ep) for ep in settled)
            self._spill_failed_locked("removing the stored episodes", exc)
        else:
            self._settled.clear()

    def _rewrite_spilled_locked(self, done: Counter[str]) -> None:
        """Rewrite the spill file without the lines `done` and the settled; holds its lock."""
        assert self.spill_path is not None
        if self.spill_path.exists():
            left = Counter(done)
            kept: list[ConversationEpisode] = []
            for episode in self._take_spilled():
                line = _spill_line(episode)
                if left[line] > 0:
                    left[line] -= 1
                elif not self._is_settled(episode):
                    kept.append(episode)
            self._write_spilled_locked(kept)

    def _write_spilled_locked(self, episodes: Sequence[ConversationEpisode]) -> None:
        """Replace the spill file's lines with `episodes` (none: no file); holds its lock."""
        assert self.spill_path is not None
        if not episodes:
            self.spill_path.unlink(missing_ok=True)
            return
        with atomic_write(self.spill_path) as fh:
            fh.writelines(_spill_line(ep) for ep in episodes)

    def _run_worker(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                # Decided under the lock `aclose` marks the recorder closed with: once it is,
                # `aclose` writes what is pending after this thread ends, and every later
                # `record` writes itself.
                if self._closed:
                    break
            try:
                self._write_pending_blocking()
            except Exception:
                # Nothing may end this thread while episodes can still be queued: they would
                # wait for a flush, and past `max_pending` be dropped.
                logger.exception("the background writer failed; episodes kept for retry")
            # What is still pending (the store is failing) waits for the next record or
            # flush, not a busy loop.
            self._idle.set()
        self._idle.set()
