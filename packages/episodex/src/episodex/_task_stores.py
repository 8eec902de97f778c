"""Where task episodes live: the store protocol, an append-only JSONL file, and Qdrant.

Both stores keep one episode per task id (writing a task again replaces its episode), return
`read_recent` newest first, and search with BM25 (the JSONL store, in process) or with dense
plus BM25 vectors fused in the engine (the Qdrant store, embedded or on a server).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import os
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from episodex._embedders import Embedder
from episodex._engine import Engine, open_engine
from episodex._episodic import check_manifest
from episodex._errors import (
    ConfigurationError,
    EpisodeNotFoundError,
    StoreFileError,
    ValidationError,
)
from episodex._plan import (
    CollectionSpec,
    Condition,
    Filter,
    Fused,
    HasId,
    Match,
    MatchAny,
    Point,
    Search,
    SparseVec,
    Stream,
)
from episodex._sparse import Bm25Encoder
from episodex._tasks import TIME_FORMAT, Episode
from episodex._validation import require_int, require_text, require_weight

if TYPE_CHECKING:
    from episodex._memory import EpisodicMemory

__all__ = [
    "EMBED_FIELDS",
    "BaseMemoryStore",
    "JSONLMemoryStore",
    "MetadataFilter",
    "QdrantMemoryStore",
    "StoreFileError",
    "TornLine",
    "episode_point_id",
]

logger = logging.getLogger("episodex")

#: The fields embedded (and BM25-indexed) when `write` is given no `embedded_text`.
EMBED_FIELDS = ("instruction", "result", "additional_data", "error")

FilterValue = str | int | Sequence[str]
#: `{metadata key: value}`; a dotted key reaches into nested objects, a list value matches any.
MetadataFilter = Mapping[str, FilterValue]

# uuid5 namespace of task ids: the same task id always lands on the same point.
_TASK_NAMESPACE = uuid.UUID("5b0f8a52-6d43-4c55-9a7e-3f0c1d2e9b84")


def episode_point_id(task_id: str) -> str:
    """The Qdrant point id of a task's episode: a UUID derived from the task id."""
    return str(uuid.uuid5(_TASK_NAMESPACE, task_id))


@runtime_checkable
class BaseMemoryStore(Protocol):
    """What a task-episode store provides. Every method is async.

    Writing an episode whose task id is already stored replaces that episode.
    """

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Store an episode; `embedded_text` is what to index instead of its default text."""
        ...

    async def read_recent(self, n: int) -> list[Episode]:
        """The `n` episodes completed last, newest first."""
        ...

    async def count(self) -> int:
        """How many episodes are stored."""
        ...

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        """Up to `k` episodes relevant to `query`, best first."""
        ...

    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""
        ...

    async def delete(self, id_: str) -> None:
        """Delete an episode by its id; `EpisodeNotFoundError` if there is none."""
        ...

    async def update(self, episode: Episode) -> None:
        """Replace the stored episode with this one's id; `EpisodeNotFoundError` if none."""
        ...


@dataclass(frozen=True, slots=True)
class TornLine:
    """A last line cut short by a crash mid-write, found when the store was opened.

    Attributes:
        line_number: Its line number in the file, starting at 1.
        offset: The byte offset where it began; the file was cut back to here.
        text: What was there (undecodable bytes replaced).
        saved_to: The side file the fragment was appended to, so nothing is lost.
    """

    line_number: int
    offset: int
    text: str
    saved_to: Path


# -- shared checks -----------------------------------------------------------------------


def _episode(value: object) -> Episode:
    if isinstance(value, Episode):
        return value
    if isinstance(value, Mapping):
        return Episode.parse(value)  # pyright: ignore[reportUnknownArgumentType]
    raise ValidationError(f"expected an Episode, got {type(value).__name__}")


def _embedded_text(episode: Episode, text: object) -> str:
    if text is None:
        return episode.format(mode="concat", include=EMBED_FIELDS)
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"embedded_text must be None or a non-empty string, got {text!r}")
    return text


def _id_arg(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"id_ must be a non-empty string, got {value!r}")
    return value


def _threshold_arg(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(f"score_threshold must be a finite number or None, got {value!r}")
    return float(value)


def _search_kwargs(kwargs: Mapping[str, Any], allowed: Sequence[str], store: str) -> None:
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ValidationError(
            f"{store}.search got unknown option(s) {unknown}; it accepts {sorted(allowed)}"
        )


def _metadata_filter(value: object) -> dict[str, str | int | tuple[str, ...]]:
    """Validate a `{metadata key: value}` filter."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"filter must be a mapping of metadata keys to values, got {type(value).__name__}"
        )
    checked: dict[str, str | int | tuple[str, ...]] = {}
    for key, wanted in value.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            raise ValidationError(f"filter key {key!r} must be a metadata key like 'user' or 'run.id'")
        if isinstance(wanted, bool):
            # The embedded engine's binding reads True as the integer 1 and never matches a
            # JSON boolean, so a boolean filter would silently find nothing there.
            raise ValidationError(
                f"filter value for {key!r} is a boolean, which the embedded engine cannot match; "
                "store flags as strings (e.g. 'yes'/'no') and filter on those"
            )
        if isinstance(wanted, str | int):
            checked[key] = wanted
        elif (
            isinstance(wanted, Sequence)
            and wanted
            and all(isinstance(v, str) for v in wanted)  # pyright: ignore[reportUnknownVariableType]
        ):
            checked[key] = tuple(wanted)  # pyright: ignore[reportUnknownArgumentType]
        else:
            raise ValidationError(
                f"filter value for {key!r} must be a string, an integer or a non-empty "
                f"list of strings, got {wanted!r}"
            )
    return checked


def _lookup(metadata: Mapping[str, Any], key: str) -> Any:
    value: Any = metadata
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]  # pyright: ignore[reportUnknownVariableType]
    return value


def _matches(metadata: Mapping[str, Any], flt: Mapping[str, str | int | tuple[str, ...]]) -> bool:
    """In-process twin of the Qdrant filter: a list field matches if any element matches."""
    for key, wanted in flt.items():
        value = _lookup(metadata, key)
        values: list[Any] = list(value) if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownArgumentType]
        options = wanted if isinstance(wanted, tuple) else (wanted,)
        # bool is an int in Python, not in JSON: compare types as well as values.
        if not any(type(v) is type(o) and v == o for v in values for o in options):
            return False
    return True


def _describe(kind: str, count: int, newest: Episode | None, oldest: Episode | None) -> str:
    plural = "" if count == 1 else "s"
    if newest is None or oldest is None:
        return f"{kind}: {count} episode{plural}"
    lines = [
        f"{kind}: {count} episode{plural}, from {oldest.completed_at.strftime(TIME_FORMAT)} "
        f"to {newest.completed_at.strftime(TIME_FORMAT)} UTC",
        f"  newest: {newest.completed_at.strftime(TIME_FORMAT)} | {_clip(newest.task.instruction)}",
        f"  oldest: {oldest.completed_at.strftime(TIME_FORMAT)} | {_clip(oldest.task.instruction)}",
    ]
    return "\n".join(lines)


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- JSONL -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    episode: Episode
    seq: int
    text: str | None
    terms: dict[int, float] = field(default_factory=dict[int, float])


class JSONLMemoryStore:
    """Task episodes in one append-only JSONL file, searched with BM25 in process.

    Every change is one appended line (a write, an update, or a delete tombstone), flushed
    with `fsync` before the call returns; the file is replayed when the store opens. A crash
    mid-write leaves at most a torn last line: it is detected on open, appended to a
    `<filename>.torn` side file, cut from the store file and reported in `torn_lines` and the
    log (or, with `on_torn_line="raise"`, raised as `StoreFileError`). Any other bad line
    raises `StoreFileError` and the file is left as it is. One process should write a file
    at a time.

    ```python
    from episodex import Episode, JSONLMemoryStore, Task, TaskResult

    store = JSONLMemoryStore("./agent-memory")
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
    ) -> None:
        if on_torn_line not in ("repair", "raise"):
            raise ConfigurationError(f"on_torn_line must be 'repair' or 'raise', got {on_torn_line!r}")
        if not isinstance(filename, str) or not filename or Path(filename).name != filename:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"filename must be a plain file name, got {filename!r}")
        self.dir = Path(dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the store folder {self.dir}: {exc}") from exc
        self.path = self.dir / filename
        self.torn_lines: list[TornLine] = []
        """Torn last lines found and moved aside when the store was opened."""
        self._fsync = fsync
        self._bm25 = bm25 or Bm25Encoder()
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._by_task: dict[str, str] = {}
        self._df: Counter[int] = Counter()
        self._seq = 0
        self._needs_newline = False
        self._load(on_torn_line)

    # -- the file ------------------------------------------------------------------------

    def _load(self, on_torn_line: str) -> None:
        data = self.path.read_bytes() if self.path.exists() else b""
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
            except ValueError:
                torn = (len(lines) + 1, len(data) - len(tail), tail)
        elif tail:
            self._needs_newline = True
        if bad:
            shown = "; ".join(f"line {n}: {why}" for n, why in bad[:5])
            more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
            raise StoreFileError(
                f"{self.path} has {len(bad)} bad line(s): {shown}{more}; the file was not changed. "
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

    @staticmethod
    def _parse_line(raw: bytes) -> dict[str, Any]:
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"not JSON ({exc})") from None
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
        return record  # pyright: ignore[reportUnknownVariableType]

    def _set_aside(self, number: int, offset: int, fragment: bytes) -> TornLine:
        side = self.path.with_name(self.path.name + ".torn")
        with side.open("ab") as fh:
            fh.write(fragment + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        # Only after the fragment is safe elsewhere is it cut from the store file.
        with self.path.open("r+b") as fh:
            fh.truncate(offset)
            fh.flush()
            os.fsync(fh.fileno())
        torn = TornLine(number, offset, fragment.decode("utf-8", errors="replace"), side)
        logger.warning(
            "episodex: %s ended with a torn line %d (%d bytes, a write cut short by a crash); "
            "moved it to %s",
            self.path, number, len(fragment), side,
        )
        return torn

    def _append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        if self._needs_newline:
            line = b"\n" + line
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                view = memoryview(line)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                if self._fsync:
                    os.fsync(fd)
            except OSError:
                # Disk full or similar: take the partial line back so the file stays whole.
                os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)
        self._needs_newline = False

    # -- the index -----------------------------------------------------------------------

    def _apply(self, record: Mapping[str, Any]) -> None:
        if record["op"] == "delete":
            self._remove(record["id_"])
        else:
            self._put(record["episode"], record.get("text"))

    def _remove(self, id_: str) -> _Entry | None:
        entry = self._entries.pop(id_, None)
        if entry is not None:
            del self._by_task[entry.episode.task.id_]
            self._df.subtract(entry.terms.keys())
        return entry

    def _put(self, episode: Episode, text: str | None) -> None:
        self._remove(episode.id_)
        previous = self._by_task.get(episode.task.id_)
        if previous is not None:
            self._remove(previous)
        vec = self._bm25.document(text if text is not None else _embedded_text(episode, None))
        terms: dict[int, float] = {}
        for index, value in zip(vec.indices, vec.values, strict=True):
            terms[index] = terms.get(index, 0.0) + value
        self._seq += 1
        self._entries[episode.id_] = _Entry(episode, self._seq, text, terms)
        self._by_task[episode.task.id_] = episode.id_
        self._df.update(terms.keys())

    # -- the store methods, synchronous --------------------------------------------------

    def _write(self, episode: Episode, text: str | None) -> None:
        record: dict[str, Any] = {"op": "write", "episode": episode.to_record()}
        if text is not None:
            record["text"] = text
        with self._lock:
            self._append(record)
            self._put(episode, text)

    def _update(self, episode: Episode) -> None:
        with self._lock:
            old = self._entries.get(episode.id_)
            if old is None:
                raise EpisodeNotFoundError(f"no episode {episode.id_!r} in {self.path}")
            # Keep a custom indexed text only while the task's text could not have changed.
            text = old.text if old.episode.task == episode.task else None
            record: dict[str, Any] = {"op": "update", "episode": episode.to_record()}
            if text is not None:
                record["text"] = text
            self._append(record)
            self._put(episode, text)

    def _delete(self, id_: str) -> None:
        with self._lock:
            if id_ not in self._entries:
                raise EpisodeNotFoundError(f"no episode {id_!r} in {self.path}")
            self._append({"op": "delete", "id_": id_})
            self._remove(id_)

    def _ordered(self) -> list[_Entry]:
        return sorted(self._entries.values(), key=lambda e: (e.episode.completed_at, e.seq), reverse=True)

    def _search(self, query: str, k: int, flt: Mapping[str, Any], threshold: float | None) -> list[Episode]:
        q = self._bm25.query(query)
        with self._lock:
            n = len(self._entries)
            # Okapi BM25 as Qdrant's IDF modifier computes it, over the live episodes.
            idf = {
                t: math.log(1 + (n - self._df[t] + 0.5) / (self._df[t] + 0.5))
                for t in q.indices
                if self._df[t] > 0
            }
            if not idf or k == 0:
                return []
            scored: list[tuple[float, int, Episode]] = []
            for entry in self._entries.values():
                if flt and not _matches(entry.episode.metadata, flt):
                    continue
                score = sum(
                    idf[t] * weight * entry.terms.get(t, 0.0)
                    for t, weight in zip(q.indices, q.values, strict=True)
                    if t in idf
                )
                if score > 0 and (threshold is None or score >= threshold):
                    scored.append((score, entry.seq, entry.episode))
        scored.sort(key=lambda s: (-s[0], -s[1]))
        return [episode for _, _, episode in scored[:k]]

    # -- the store protocol --------------------------------------------------------------

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Append the episode; one that has the same task id (or episode id) is replaced.

        Args:
            episode: The episode.
            embedded_text: The text BM25 indexes instead of the instruction, result,
                additional data and error.
        """
        episode = _episode(episode)
        text = None if embedded_text is None else _embedded_text(episode, embedded_text)
        await asyncio.to_thread(self._write, episode, text)

    async def read_recent(self, n: int) -> list[Episode]:
        """The `n` episodes completed last, newest first (ties: the later written first)."""
        n = require_int("n", n)
        with self._lock:
            return [e.episode for e in self._ordered()[:n]]

    async def count(self) -> int:
        """How many episodes are stored."""
        return len(self._entries)

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        """Up to `k` episodes ranked by BM25 (Snowball stemming, English stopwords).

        Args:
            query: The search text (usually the new task's instruction).
            k: How many episodes at most.
            **kwargs: `filter`, a `{metadata key: value}` mapping (dotted keys reach nested
                objects, a list of strings matches any of them); `score_threshold`, the least
                BM25 score kept.
        """
        _search_kwargs(kwargs, self.SEARCH_OPTIONS, "JSONLMemoryStore")
        query = require_text("query", query)
        k = require_int("k", k)
        flt = _metadata_filter(kwargs.get("filter"))
        threshold = _threshold_arg(kwargs.get("score_threshold"))
        return await asyncio.to_thread(self._search, query, k, flt, threshold)

    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""
        with self._lock:
            ordered = self._ordered()
        newest = ordered[0].episode if ordered else None
        oldest = ordered[-1].episode if ordered else None
        return _describe(f"JSONLMemoryStore ({self.path})", len(ordered), newest, oldest)

    async def delete(self, id_: str) -> None:
        """Append a delete tombstone for the episode; `EpisodeNotFoundError` if there is none."""
        await asyncio.to_thread(self._delete, _id_arg(id_))

    async def update(self, episode: Episode) -> None:
        """Append the new version of a stored episode; `EpisodeNotFoundError` if there is none."""
        await asyncio.to_thread(self._update, _episode(episode))

    async def compact(self) -> int:
        """Rewrite the file with only the live episodes (atomically); returns how many."""
        return await asyncio.to_thread(self._compact)

    def _compact(self) -> int:
        with self._lock:
            entries = sorted(self._entries.values(), key=lambda e: e.seq)
            tmp = self.path.with_name(f".{self.path.name}.compact")
            with tmp.open("wb") as fh:
                for e in entries:
                    record: dict[str, Any] = {"op": "write", "episode": e.episode.to_record()}
                    if e.text is not None:
                        record["text"] = e.text
                    fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(self.path)
            self._needs_newline = False
            return len(entries)


# -- Qdrant ------------------------------------------------------------------------------

COLLECTION = "task_episodes"


class QdrantMemoryStore:
    """Task episodes in a Qdrant collection (`task_episodes`): dense plus BM25, fused by RRF.

    Runs on the embedded Qdrant Edge engine (a folder), qdrant-client's `:memory:` mode or a
    Qdrant server, and can share the engine and embedder of an `EpisodicMemory`, so one
    folder holds conversation and task episodes. Each episode is one point whose id is derived
    from the task id, so writing a task again replaces its episode.

    Open it with `path=` (its own embedded folder), `location=":memory:"`, `url=` (a server),
    `engine=`, or `memory=` to share an `EpisodicMemory`'s store:

    ```python
    from episodex import Episode, EpisodicMemory, QdrantMemoryStore, Task, TaskResult

    memory = EpisodicMemory(path="./memory")
    store = QdrantMemoryStore(memory=memory)  # the same folder, its own collection
    task = Task(instruction="Convert 3 miles to km")
    await store.write(Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km")))
    hits = await store.search("miles to kilometres", k=3, score_threshold=0.3)
    print(hits[0].result)  # -> 4.83 km
    memory.close()
    ```

    Args:
        path: Folder of an embedded Qdrant Edge store.
        url: A Qdrant server.
        location: `:memory:` for qdrant-client's local mode.
        api_key: Qdrant API key (server).
        engine: An engine opened elsewhere (not closed by this store).
        memory: An `EpisodicMemory` whose engine and embedder to share.
        embedder: The dense embedder (default: the memory's, else the bundled model).
        collection: The collection name.
        bm25: The BM25 tokenizer and parameters.
        stage1_limit: How many candidates each stream hands to fusion.
    """

    SEARCH_OPTIONS = ("filter", "score_threshold", "mode", "dense_weight", "bm25_weight", "rrf_k")

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        location: str | None = None,
        api_key: str | None = None,
        engine: Engine | None = None,
        memory: EpisodicMemory | None = None,
        embedder: Embedder | str | None = None,
        collection: str = COLLECTION,
        bm25: Bm25Encoder | None = None,
        stage1_limit: int = 100,
    ) -> None:
        from episodex._memory import resolve_embedder

        sources = [
            name
            for name, value in (
                ("path", path), ("url", url), ("location", location), ("engine", engine), ("memory", memory),
            )
            if value is not None
        ]
        if len(sources) != 1:
            raise ConfigurationError(
                "give exactly one of path=, url=, location=':memory:', engine= or memory=; "
                f"got {sources or 'none'}"
            )
        if not isinstance(collection, str) or not collection:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"collection must be a non-empty string, got {collection!r}")
        if memory is not None:
            engine = memory.engine
            embedder = memory.embedder if embedder is None else embedder
        self.embedder: Embedder = resolve_embedder(embedder)
        self._owns_engine = engine is None
        if engine is None:
            engine = open_engine(
                path=os.fspath(path) if path is not None else None,
                url=url,
                location=location,
                api_key=api_key,
            )
        self.engine: Engine = engine
        self.collection = collection
        self.bm25 = bm25 or Bm25Encoder()
        self.stage1_limit = require_int("stage1_limit", stage1_limit) or 1
        manifest = {
            "embedder": self.embedder.model_id,
            "dimension": self.embedder.dimension,
            "kind": "task_episodes",
            "schema": 1,
            "bm25": self.bm25.config,
        }
        try:
            stored = engine.ensure_collection(
                CollectionSpec(
                    name=collection,
                    dense={"dense": self.embedder.dimension},
                    sparse=("bm25",),
                    keywords=("episode_id", "task_id"),
                    floats=("completed_at",),
                    metadata=manifest,
                )
            )
            check_manifest(stored, manifest, f"the task episode collection {collection!r}")
        except BaseException:
            if self._owns_engine:
                engine.close()
            raise
        self._write_lock = threading.Lock()

    # -- synchronous core ----------------------------------------------------------------

    def _point(self, episode: Episode, text: str) -> Point:
        dense = self.embedder.embed_documents([text])[0].tolist()
        return Point(
            id=episode_point_id(episode.task.id_),
            dense={"dense": dense},
            sparse={"bm25": self.bm25.document(text)},
            payload={
                "episode": episode.to_record(),
                "episode_id": episode.id_,
                "task_id": episode.task.id_,
                "completed_at": episode.completed_at.timestamp(),
                "metadata": episode.metadata,
                "text": text,
            },
        )

    def _store(self, point: Point, episode_id: str) -> None:
        # Write first, then drop any other point holding the same episode id (its task id
        # changed): a crash in between leaves a duplicate, never a loss.
        self.engine.upsert(self.collection, [point])
        stale = Filter(must=(Match("episode_id", episode_id),), must_not=(HasId((point.id,)),))
        if self.engine.count(self.collection, stale):
            self.engine.delete(self.collection, stale)

    def _write(self, episode: Episode, text: str | None) -> None:
        point = self._point(episode, _embedded_text(episode, text))
        with self._write_lock:
            self._store(point, episode.id_)

    def _find(self, episode_id: str) -> dict[str, Any] | None:
        hits, _ = self.engine.scroll(
            self.collection, Filter(must=(Match("episode_id", episode_id),)), limit=1
        )
        return hits[0].payload if hits else None

    def _update(self, episode: Episode) -> None:
        with self._write_lock:
            old = self._find(episode.id_)
            if old is None:
                raise EpisodeNotFoundError(f"no episode {episode.id_!r} in collection {self.collection!r}")
            custom = old.get("text") != _embedded_text(Episode.parse(old["episode"]), None)
            same_task = old["episode"]["task"] == episode.task.model_dump(mode="json")
            text = old["text"] if custom and same_task else None
            self._store(self._point(episode, _embedded_text(episode, text)), episode.id_)

    def _delete(self, id_: str) -> None:
        flt = Filter(must=(Match("episode_id", id_),))
        with self._write_lock:
            if not self.engine.count(self.collection, flt):
                raise EpisodeNotFoundError(f"no episode {id_!r} in collection {self.collection!r}")
            self.engine.delete(self.collection, flt)

    def _recent(self, n: int, *, descending: bool = True) -> list[Episode]:
        if n == 0:
            return []
        hits, _ = self.engine.scroll(
            self.collection, Filter(), limit=n, order_by="completed_at", descending=descending,
            with_payload=("episode",),
        )
        return [Episode.parse(h.payload["episode"]) for h in hits]

    def _search(
        self,
        query: str,
        k: int,
        flt: Filter,
        threshold: float | None,
        mode: str,
        weights: Mapping[str, float],
        rrf_k: int,
    ) -> list[Episode]:
        if k == 0:
            return []
        stage1 = max(self.stage1_limit, k)
        dense = (
            Stream("dense", self.embedder.embed_query(query).tolist(), stage1)
            if mode != "bm25" and weights["dense"] > 0
            else None
        )
        sparse_vec = self.bm25.query(query) if mode != "dense" and weights["bm25"] > 0 else SparseVec([], [])
        sparse = Stream("bm25", sparse_vec, stage1) if sparse_vec.indices else None
        payload = ("episode",)
        if mode == "dense" or sparse is None:
            if dense is None:
                return []  # a BM25-only search for a query of only stopwords
            request: Search | Fused = Search(dense, flt, k, payload, threshold)
        elif mode == "bm25" or dense is None:
            request = Search(sparse, flt, k, payload, threshold)
        else:
            if threshold is not None:
                # RRF scores are ranks, not similarities: the threshold applies to the dense
                # stream, and fusion only ranks the episodes that pass it.
                passing = self.engine.query(
                    self.collection, [Search(dense, flt, stage1, False, threshold)]
                )[0]
                if not passing:
                    return []
                flt = flt.and_(HasId(tuple(h.id for h in passing)))
            request = Fused((dense, sparse), (weights["dense"], weights["bm25"]), rrf_k, flt, k, payload)
        hits = self.engine.query(self.collection, [request])[0]
        return [Episode.parse(h.payload["episode"]) for h in hits]

    def _summary(self) -> str:
        count = self.engine.count(self.collection, Filter())
        newest = self._recent(1)
        oldest = self._recent(1, descending=False)
        where = f"collection {self.collection!r} on {self.engine.kind}"
        return _describe(
            f"QdrantMemoryStore ({where})", count, newest[0] if newest else None, oldest[0] if oldest else None
        )

    # -- the store protocol --------------------------------------------------------------

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Embed and store the episode; one with the same task id (or episode id) is replaced.

        Args:
            episode: The episode.
            embedded_text: The text embedded and BM25-indexed instead of the instruction,
                result, additional data and error.
        """
        episode = _episode(episode)
        text = None if embedded_text is None else _embedded_text(episode, embedded_text)
        await asyncio.to_thread(self._write, episode, text)

    async def read_recent(self, n: int) -> list[Episode]:
        """The `n` episodes completed last, newest first."""
        return await asyncio.to_thread(self._recent, require_int("n", n))

    async def count(self) -> int:
        """How many episodes are stored."""
        return await asyncio.to_thread(self.engine.count, self.collection, Filter())

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        """Up to `k` episodes for `query`: dense and BM25 streams fused by weighted RRF.

        Args:
            query: The search text (usually the new task's instruction).
            k: How many episodes at most.
            **kwargs: `filter`: a `{metadata key: value}` mapping (dotted keys reach nested
                objects, a list of strings matches any), or a plan `Filter` over the payload
                (`metadata.<key>`, `task_id`, `episode_id`, `completed_at`), passed through.
                `score_threshold`: the least cosine similarity (`hybrid`, `dense`) or BM25
                score (`bm25`) kept. `mode`: `hybrid` (default), `dense` or `bm25`.
                `dense_weight`, `bm25_weight`: the fusion weights (default 1.0 each).
                `rrf_k`: the RRF constant (default 10).
        """
        _search_kwargs(kwargs, self.SEARCH_OPTIONS, "QdrantMemoryStore")
        query = require_text("query", query)
        k = require_int("k", k)
        raw_filter = kwargs.get("filter")
        flt = raw_filter if isinstance(raw_filter, Filter) else _plan_filter(_metadata_filter(raw_filter))
        threshold = _threshold_arg(kwargs.get("score_threshold"))
        mode = kwargs.get("mode", "hybrid")
        if mode not in ("hybrid", "dense", "bm25"):
            raise ValidationError(f"mode must be 'hybrid', 'dense' or 'bm25', got {mode!r}")
        weights = {
            "dense": require_weight("dense_weight", kwargs.get("dense_weight", 1.0)),
            "bm25": require_weight("bm25_weight", kwargs.get("bm25_weight", 1.0)),
        }
        if not any(weights.values()):
            raise ValidationError("dense_weight and bm25_weight are both 0: give one a weight > 0")
        rrf_k = kwargs.get("rrf_k", 10)
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1:
            raise ValidationError(f"rrf_k must be an integer >= 1, got {rrf_k!r}")
        return await asyncio.to_thread(
            functools.partial(self._search, query, k, flt, threshold, mode, weights, rrf_k)
        )

    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""
        return await asyncio.to_thread(self._summary)

    async def delete(self, id_: str) -> None:
        """Delete the episode with this id; `EpisodeNotFoundError` if there is none."""
        await asyncio.to_thread(self._delete, _id_arg(id_))

    async def update(self, episode: Episode) -> None:
        """Replace the stored episode with this one's id; `EpisodeNotFoundError` if none."""
        await asyncio.to_thread(self._update, _episode(episode))

    def close(self) -> None:
        """Close the engine if this store opened it; idempotent."""
        if self._owns_engine:
            self.engine.close()

    async def aclose(self) -> None:
        """Close the engine if this store opened it."""
        self.close()

    async def __aenter__(self) -> QdrantMemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def _plan_filter(flt: Mapping[str, str | int | tuple[str, ...]]) -> Filter:
    conditions: list[Condition] = []
    for key, wanted in flt.items():
        path = f"metadata.{key}"
        conditions.append(MatchAny(path, wanted) if isinstance(wanted, tuple) else Match(path, wanted))
    return Filter(must=tuple(conditions))
