"""The JSONL task-episode store: one append-only file, BM25 search in process."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import math
import os
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Unpack

from episodex._common.errors import (
    ConfigurationError,
    EngineError,
    EpisodeNotFoundError,
    StorageFullError,
    StoreClosedError,
    StoreFileError,
    ValidationError,
)
from episodex._common.files import atomic_write, remove_stale_temps
from episodex._common.lockfile import FolderLock
from episodex._common.sync import in_thread
from episodex._common.text import bad_lines_summary
from episodex._common.validation import read_json, require_int
from episodex._engines.sparse import Bm25Encoder
from episodex._tasks.model import Episode
from episodex._tasks.store import (
    BaseMemoryStore,
    MetadataFilter,
    TaskSearchOptions,
    Tenant,
    TornLine,
    bm25_arg,
    describe_store,
    embedded_text_arg,
    episode_arg,
    episode_point_id,
    id_arg,
    known_options,
    logger,
    metadata_filter,
    metadata_matches,
    search_args,
    tenant_arg,
    tenant_key,
    threshold_arg,
)

__all__ = ["JSONLTaskStore"]


# What a failed append leaves when it may have reached the file.
_MAY_BE_STORED = (
    "the change may be in the file; the store was closed: open it again to see whether the "
    "change was stored"
)

# What a write that ran out of room fails with: no space, over a quota, over a size limit.
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _write_error(
    exc: OSError,
    path: Path,
    doing: str,
    *,
    take_back: OSError | None = None,
    outcome: str | None = None,
) -> EngineError:
    """The typed error of a failed write to the store file (which is left as it was).

    With `take_back`, the error of cutting the failed line back out: the line, whole or in
    part, may be in the file, and the store was closed so the next open reads what it holds.
    `outcome` says what the failure left where that is neither.
    """
    if outcome is None and take_back is None:
        outcome = "nothing was written"
    elif outcome is None:
        outcome = (
            f"taking the line back failed too ({take_back}), so the change may be in the file; "
            "the store was closed: open it again to see whether the change was stored (a part "
            "line is set aside as torn)"
        )
    if exc.errno in _NO_ROOM:
        return StorageFullError(
            f"no room on disk for {path} while {doing} ({exc.strerror}); {outcome}. "
            "Free some space and try again"
        )
    return EngineError(f"cannot write {path} while {doing} ({exc}); {outcome}")


class _NotJson(ValueError):
    """A line that is not a whole JSON document: on the last line, what a crash leaves."""


def _closes_at_end(raw: bytes) -> bool:
    """Whether `raw` is an object whose outer `{` is closed by its last character.

    Brackets are counted outside strings (read without recursion, so any depth is judged):
    no strict prefix of a record the store writes is closed, every whole one is. Multi-byte
    UTF-8 characters never hold the ASCII bytes counted.
    """
    raw = raw.strip()
    if not raw.startswith(b"{"):
        return False
    depth = 0
    in_string = escaped = False
    for position, byte in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
            if depth == 0:
                return position == len(raw) - 1
    return False


def _record_once(side: Path, fragment: bytes) -> None:
    """Append `fragment` as a line of the side file, unless it is its last line already.

    An open that recorded it and then failed to cut it from the store file finds it again at
    the next open: it is the same crash's line, recorded once. A side file ending in a part
    line (an append cut short) gets a newline first, so the fragment stays a line of its own.
    """
    fd = os.open(side, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - len(fragment) - 2)
        tail = os.pread(fd, size - start, start)
        line = fragment + b"\n"
        if tail.endswith(line) and (size == len(line) or tail.endswith(b"\n" + line)):
            return
        if size and not tail.endswith(b"\n"):
            line = b"\n" + line
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(slots=True)
class _Entry:
    episode: Episode
    seq: int
    text: str | None
    terms: dict[int, float] = field(default_factory=dict[int, float])
    recency: tuple[float, str] = (0.0, "")
    """Where it stands in `read_recent`: its end time as the engines hold it, its point id."""


class JSONLTaskStore(BaseMemoryStore):
    """Task episodes in one append-only JSONL file, searched with BM25 in process.

    Every attempt is kept: a second episode for the same task is stored beside the first,
    and only writing the same episode id again replaces it. With `user_id` and/or `agent_id`
    the store keeps that tenant's episodes in a file of its own in the folder (named by a
    hash of the ids), so stores of several tenants share one folder and never see each
    other's episodes.

    Every change is one appended line (a write, an update, or a delete tombstone), flushed
    with `fsync` before the call returns; the file is replayed when the store opens. A crash
    mid-write leaves at most a torn last line: it is detected on open, appended to a
    `<filename>.torn` side file (once, however often an open fails to cut it), cut from the
    store file and reported in `torn_lines` and the log (or, with `on_torn_line="raise"`,
    raised as `StoreFileError`). Any other bad line
    raises `StoreFileError` and the file is left as it is. A change the disk cannot take (full,
    over a quota) raises `StorageFullError`, any other failed write `EngineError`, with its
    partial line taken back; when even that fails, the error says the change may be in the
    file and the store closes (open it again to read what the file holds). One process should
    write a file at a time.

    ```python
    from episodex import Episode, JSONLTaskStore, Task, TaskResult

    store = JSONLTaskStore("./agent-memory")
    task = Task(instruction="Convert 3 miles to km")
    await store.write(Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km"),
                              metadata={"user": "u1"}))
    hits = await store.search("how far is 3 miles in km", k=3, filter={"user": "u1"})
    print(hits[0].result)  # -> 4.83 km
    ```

    Args:
        dir: The folder of the file (created if missing).
        filename: The file name.
        on_torn_line: `repair` (move the fragment aside and report it) or `raise`.
        fsync: Flush each change to disk before returning (turn off only for throwaway data).
        bm25: The BM25 tokenizer and parameters (the same as the Qdrant store's).
        user_id: The end user whose episodes this store holds (None: not scoped).
        agent_id: The agent whose episodes this store holds (None: not scoped).
    """

    SEARCH_OPTIONS = ("filter", "score_threshold")

    def __init__(
        self,
        dir: str | os.PathLike[str],
        filename: str = "episodes.jsonl",
        *,
        on_torn_line: Literal["repair", "raise"] = "repair",
        fsync: bool = True,
        bm25: Bm25Encoder | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        try:
            self.tenant: Tenant = tenant_arg(user_id, agent_id)
        except ValidationError as exc:
            raise ConfigurationError(str(exc)) from None
        self.user_id, self.agent_id = self.tenant
        if on_torn_line not in ("repair", "raise"):
            raise ConfigurationError(
                f"on_torn_line must be 'repair' or 'raise', got {on_torn_line!r}"
            )
        self._bm25 = bm25_arg(bm25)
        if not isinstance(filename, str) or not filename or Path(filename).name != filename:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"filename must be a plain file name, got {filename!r}")
        self.dir = Path(dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the store folder {self.dir}: {exc}") from exc
        if self.tenant != (None, None):
            # Ids may hold any character (and differ only in case or accents), so the file
            # is named by a hash of them; every line also carries them, checked on open.
            digest = hashlib.sha256(tenant_key(self.tenant).encode("utf-8")).hexdigest()[:32]
            stem, dot, suffix = filename.rpartition(".")
            filename = f"{stem}.{digest}.{suffix}" if dot and stem else f"{filename}.{digest}"
        self.path = self.dir / filename
        # Held while open: a second writer of the file (another process, or another store
        # object) would lose writes to the other's compaction.
        self._file_lock = FolderLock(
            self.dir,
            name=f".{filename}.lock",
            what="the task store",
            advice="close that store first (`close()`), or share one store object",
        )
        self.torn_lines: list[TornLine] = []
        """Torn last lines found and moved aside when the store was opened."""
        self._fsync = fsync
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._df: Counter[int] = Counter()
        self._seq = 0
        self._needs_newline = False
        self._closed = False
        # With the file's lock held no compaction is in flight: a temp file of one is what a
        # killed compaction left, a whole copy of the store that nothing else deletes.
        remove_stale_temps(self.path)
        try:
            self._load(on_torn_line)
        except BaseException:
            self._file_lock.release()  # a store that failed to open holds nothing
            raise

    # -- the file ------------------------------------------------------------------------

    def _load(self, on_torn_line: str) -> None:
        try:
            data = self.path.read_bytes() if self.path.exists() else b""
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the task store file {self.path}: {exc.strerror or exc}"
            ) from exc
        lines = data.split(b"\n")
        tail = lines.pop()  # what follows the last newline: b"" for a whole file
        records: list[dict[str, Any]] = []
        bad: list[tuple[int, str]] = []
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                try:
                    records.append(self._parse_line(raw))
                except ValueError as exc:
                    bad.append((number, str(exc)))
        torn: tuple[int, int, bytes] | None = None
        if tail.strip():
            try:
                records.append(self._parse_line(tail))
                self._needs_newline = True  # whole record, only its newline was lost
            except _NotJson as exc:
                # A crash leaves a strict prefix of a record, whose outer object is still
                # open: only such a tail is torn. One closed at its end is a whole record the
                # reader refused (nested too deeply, a number too long, a key named twice, a
                # hand edit's stray comma): a bad line, never cut from the file.
                if _closes_at_end(tail):
                    bad.append((len(lines) + 1, str(exc)))
                else:
                    torn = (len(lines) + 1, len(data) - len(tail), tail)
            except ValueError as exc:
                # A whole record that fails its checks is a bad line like any other (a hand
                # edit saved without a final newline): never cut from the file.
                bad.append((len(lines) + 1, str(exc)))
        elif tail:
            self._needs_newline = True
        if bad:
            raise StoreFileError(
                f"{self.path} has {len(bad)} bad line(s): {bad_lines_summary(bad)}; the file was "
                "not changed. "
                "Fix or remove those lines (each line is one JSON record), then open it again",
                bad,
            )
        if torn is not None:
            number, offset, fragment = torn
            if on_torn_line == "raise":
                raise StoreFileError(
                    f"{self.path} ends with a torn line {number} (a write cut short by a crash); "
                    "the file was not changed. Open it with on_torn_line='repair' to move the "
                    "fragment to a side file and go on",
                    [(number, "torn last line: not a complete JSON record")],
                )
            self.torn_lines.append(self._set_aside(number, offset, fragment))
        for record in records:
            self._apply(record)

    def _parse_line(self, raw: bytes) -> dict[str, Any]:
        try:
            record = read_json(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _NotJson(f"not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        op = record.get("op")  # pyright: ignore[reportUnknownMemberType]
        if op == "delete":
            if not isinstance(record.get("id_"), str):  # pyright: ignore[reportUnknownMemberType]
                raise ValueError("a delete record needs an id_ string")
        elif op in ("write", "update"):
            try:
                record["episode"] = Episode.parse(record.get("episode"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType, reportArgumentType]
            except ValidationError as exc:
                raise ValueError(str(exc)) from None
            text = record.get("text")  # pyright: ignore[reportUnknownMemberType]
            if text is not None and not isinstance(text, str):
                raise ValueError("text must be a string")
        else:
            raise ValueError(f"unknown op {op!r}; expected write, update or delete")
        owner = (record.get("user_id"), record.get("agent_id"))  # pyright: ignore[reportUnknownMemberType]
        if owner != self.tenant:
            raise ValueError(
                "the record belongs to another user_id/agent_id than this store's; "
                "open the file with the ids it was written with"
            )
        return record  # pyright: ignore[reportUnknownVariableType]

    def _set_aside(self, number: int, offset: int, fragment: bytes) -> TornLine:
        side = self.path.with_name(self.path.name + ".torn")
        doing = "setting its torn last line aside"
        try:
            _record_once(side, fragment)
        except OSError as exc:
            raise _write_error(
                exc,
                self.path,
                doing,
                outcome=f"the store file was not changed, and {side} may hold the torn line "
                "in part",
            ) from exc
        # Only after the fragment is safe elsewhere is it cut from the store file.
        try:
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.ftruncate(fd, offset)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _write_error(
                exc,
                self.path,
                doing,
                outcome=f"the torn line is kept in {side}, and the store file may still end "
                "with it: opening the store again sets it aside again (recorded once)",
            ) from exc
        torn = TornLine(number, offset, fragment.decode("utf-8", errors="replace"), side)
        logger.warning(
            "episodex: %s ended with a torn line %d (%d bytes, a write cut short by a crash); "
            "moved it to %s",
            self.path,
            number,
            len(fragment),
            side,
        )
        return torn

    def close(self) -> None:
        """Release the file for another store object or process (idempotent).

        Every later call of this store raises `StoreClosedError`.
        """
        with self._lock:  # not while a change is being written
            self._closed = True
            self._file_lock.release()

    def __enter__(self) -> JSONLTaskStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_open(self) -> None:
        # Every call, reads too: a closed store no longer holds the file, and another store
        # may write it now, so its index is a stale copy to answer from.
        if self._closed:
            raise StoreClosedError(f"the task store of {self.path} is closed; open it again")

    def _check_writable(self) -> None:
        # Every change, the compaction too: a closed store's stale index must not replace
        # the file another store writes now.
        self._check_open()
        self._file_lock.check()

    def _append(self, record: Mapping[str, Any]) -> None:
        self._check_writable()
        if self.tenant != (None, None):
            record = {**record, "user_id": self.user_id, "agent_id": self.agent_id}
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        if self._needs_newline:
            line = b"\n" + line
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _write_error(exc, self.path, "appending") from exc
        try:
            self._write_line(fd, line)
        finally:
            try:
                os.close(fd)
            except OSError as exc:
                # A network file system reports a delayed write error here, after the line (or
                # its taking back) went out: the line may be stored where the index lacks it.
                self._close_for_reopen()
                raise _write_error(
                    exc, self.path, "closing it after appending", outcome=_MAY_BE_STORED
                ) from exc
        self._needs_newline = False

    def _write_line(self, fd: int, line: bytes) -> None:
        """Append `line` to the open store file `fd`, taking a failed line back out."""
        try:
            size = os.fstat(fd).st_size
        except OSError as exc:
            raise _write_error(exc, self.path, "appending") from exc
        try:
            view = memoryview(line)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self._fsync:
                os.fsync(fd)
        except OSError as exc:
            # Disk full or similar: take the partial line back so the file stays whole.
            try:
                os.ftruncate(fd, size)
            except OSError as cut:
                self._close_for_reopen()
                raise _write_error(exc, self.path, "appending", take_back=cut) from exc
            raise _write_error(exc, self.path, "appending") from exc

    def _close_for_reopen(self) -> None:
        # The line (or part of it) may stay where the index does not hold it: no later append
        # may go on after it, and only a new open can read it.
        self._closed = True
        self._file_lock.release()

    # -- the index -----------------------------------------------------------------------

    def _apply(self, record: Mapping[str, Any]) -> None:
        if record["op"] == "delete":
            self._remove(record["id_"])
        else:
            self._put(record["episode"], record.get("text"))

    def _remove(self, id_: str) -> _Entry | None:
        entry = self._entries.pop(id_, None)
        if entry is not None:
            self._df.subtract(entry.terms.keys())
        return entry

    def _terms(self, episode: Episode, text: str | None) -> dict[int, float]:
        vec = self._bm25.document(text if text is not None else embedded_text_arg(episode, None))
        terms: dict[int, float] = {}
        for index, value in zip(vec.indices, vec.values, strict=True):
            terms[index] = terms.get(index, 0.0) + value
        return terms

    def _put(
        self, episode: Episode, text: str | None, terms: dict[int, float] | None = None
    ) -> None:
        # Only the same episode id is replaced: other attempts at the task stay.
        if terms is None:
            terms = self._terms(episode, text)
        self._remove(episode.id_)
        self._seq += 1
        recency = (episode.completed_at.timestamp(), episode_point_id(episode.id_, self.tenant))
        self._entries[episode.id_] = _Entry(episode, self._seq, text, terms, recency)
        self._df.update(terms.keys())

    # -- the store methods, synchronous --------------------------------------------------

    def _write(self, episode: Episode, text: str | None) -> None:
        record: dict[str, Any] = {"op": "write", "episode": episode.to_record()}
        if text is not None:
            record["text"] = text
        # Indexed before the line is appended: nothing may fail once it is in the file.
        terms = self._terms(episode, text)
        with self._lock:
            self._append(record)
            self._put(episode, text, terms)

    def _update(self, episode: Episode) -> None:
        with self._lock:
            self._check_open()
            old = self._entries.get(episode.id_)
            if old is None:
                raise EpisodeNotFoundError(f"no episode {episode.id_!r} in {self.path}")
            # Keep a custom indexed text only while the task's text could not have changed.
            text = old.text if old.episode.task == episode.task else None
            record: dict[str, Any] = {"op": "update", "episode": episode.to_record()}
            if text is not None:
                record["text"] = text
            terms = self._terms(episode, text)
            self._append(record)
            self._put(episode, text, terms)

    def _delete(self, id_: str) -> None:
        with self._lock:
            self._check_open()
            if id_ not in self._entries:
                raise EpisodeNotFoundError(f"no episode {id_!r} in {self.path}")
            self._append({"op": "delete", "id_": id_})
            self._remove(id_)

    def _ordered(self) -> list[_Entry]:
        # Newest first, in the one order of every task store: by the end time as the engines
        # hold it (a float, so times a float cannot tell apart are a tie there too), then by
        # point id. Ties by write order would recall other episodes here than from Qdrant.
        return sorted(self._entries.values(), key=lambda e: e.recency, reverse=True)

    def _search(
        self, query: str, k: int, flt: Mapping[str, Any], threshold: float | None
    ) -> list[Episode]:
        q = self._bm25.query(query)
        with self._lock:
            self._check_open()
            n = len(self._entries)
            # Okapi BM25 as Qdrant's IDF modifier computes it, over the live episodes.
            idf = {
                t: math.log(1 + (n - self._df[t] + 0.5) / (self._df[t] + 0.5))
                for t in q.indices
                if self._df[t] > 0
            }
            if not idf or k == 0:
                return []
            scored: list[tuple[float, str, Episode]] = []
            for entry in self._entries.values():
                if flt and not metadata_matches(entry.episode.metadata, flt):
                    continue
                score = sum(
                    idf[t] * weight * entry.terms.get(t, 0.0)
                    for t, weight in zip(q.indices, q.values, strict=True)
                    if t in idf
                )
                if score > 0 and (threshold is None or score >= threshold):
                    scored.append((score, entry.recency[1], entry.episode))
        # Equal scores (attempts at a task with the same text) by point id, as the engines
        # order them: by write order another attempt was recalled here than from Qdrant.
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [episode for _, _, episode in scored[:k]]

    # -- the store protocol --------------------------------------------------------------

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Append the episode; a stored episode with the same episode id is replaced.

        Args:
            episode: The episode.
            embedded_text: The text BM25 indexes instead of the instruction, result,
                additional data and error.
        """
        episode = episode_arg(episode)
        text = None if embedded_text is None else embedded_text_arg(episode, embedded_text)
        await in_thread(self._write, episode, text)

    async def read_recent(self, n: int, *, filter: MetadataFilter | None = None) -> list[Episode]:
        """The `n` episodes completed last, newest first (ties: by point id, as on every store).

        Args:
            n: How many episodes at most.
            filter: Only episodes whose metadata matches, as in `search`.
        """
        n = require_int("n", n)
        flt, _ = self._search_options({"filter": filter})
        with self._lock:
            self._check_open()
            ordered = self._ordered()
        return [e.episode for e in ordered if metadata_matches(e.episode.metadata, flt)][:n]

    async def count(self) -> int:
        """How many episodes are stored."""
        with self._lock:
            self._check_open()
            return len(self._entries)

    async def search(
        self, query: str, k: int = 3, **options: Unpack[TaskSearchOptions]
    ) -> list[Episode]:
        """Up to `k` episodes ranked by BM25 (Snowball stemming, English stopwords).

        Args:
            query: The search text (usually the new task's instruction).
            k: How many episodes at most.
            **options: `filter` (a `{metadata key: value}` mapping) and `score_threshold`
                (the least BM25 score kept) of `TaskSearchOptions`; the others are rejected.
        """
        query, k = search_args(query, k, options, self.SEARCH_OPTIONS, "JSONLTaskStore")
        flt, threshold = self._search_options(options)
        return await asyncio.to_thread(self._search, query, k, flt, threshold)

    def check_search_options(self, options: Mapping[str, Any]) -> None:
        """Raise `ValidationError` unless `search` takes these options (names and values).

        Strategies check their `search_kwargs` with it when they are made, not at each recall.
        """
        self._search_options(options)

    def _search_options(
        self, options: Mapping[str, Any]
    ) -> tuple[dict[str, str | int | tuple[str, ...]], float | None]:
        known_options(options, self.SEARCH_OPTIONS, "JSONLTaskStore")
        return metadata_filter(options.get("filter")), threshold_arg(options.get("score_threshold"))

    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""
        with self._lock:
            self._check_open()
            ordered = self._ordered()
        newest = ordered[0].episode if ordered else None
        oldest = ordered[-1].episode if ordered else None
        return describe_store(f"JSONLTaskStore ({self.path})", len(ordered), newest, oldest)

    async def delete(self, id_: str) -> None:
        """Append a delete tombstone for the episode; `EpisodeNotFoundError` if there is none."""
        await in_thread(self._delete, id_arg(id_))

    async def update(self, episode: Episode) -> None:
        """Append the new version of a stored episode; `EpisodeNotFoundError` if there is none."""
        await in_thread(self._update, episode_arg(episode))

    async def compact(self) -> int:
        """Rewrite the file with only the live episodes (atomically); returns how many."""
        return await in_thread(self._compact)

    def _compact(self) -> int:
        with self._lock:
            self._check_writable()
            entries = sorted(self._entries.values(), key=lambda e: e.seq)
            try:
                with atomic_write(self.path) as fh:
                    for e in entries:
                        record: dict[str, Any] = {"op": "write", "episode": e.episode.to_record()}
                        if e.text is not None:
                            record["text"] = e.text
                        if self.tenant != (None, None):
                            record["user_id"], record["agent_id"] = self.tenant
                        fh.write(
                            json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
                        )
            except OSError as exc:
                raise _write_error(exc, self.path, "compacting") from exc
            self._needs_newline = False
            return len(entries)
