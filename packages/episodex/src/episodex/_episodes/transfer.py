"""Export and import of conversation episodes: JSONL files of `memorize` records.

`export` and `import_` are methods of `EpisodeStore` (its class body binds them; hence their
`self`), kept here so the store module holds only storing and reading. They use only the
store's public methods.
"""

from __future__ import annotations

import codecs
import io
import json
import stat
import tempfile
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from episodex._common.errors import ImportFileError, ValidationError
from episodex._common.files import atomic_write
from episodex._common.text import bad_lines_summary, without_bom
from episodex._common.unreadable import readable_time, report_unreadable
from episodex._common.validation import read_json, require_callback, require_id
from episodex._engines.plan import Hit
from episodex._episodes.model import ConversationEpisode, missing_default, payload_problem

if TYPE_CHECKING:
    from episodex._episodes.store import EpisodeStore

__all__ = [
    "ImportReport",
    "bad_file_error",
    "count_records",
    "episode_record",
    "export",
    "import_",
]


@dataclass
class ImportReport:
    """What an import did.

    Attributes:
        imported: Point ids written, in file order.
        skipped: `(line_number, reason)` of each line left out (only with `errors="skip"`).
    """

    imported: list[str] = field(default_factory=list[str])
    skipped: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])


def export(
    self: EpisodeStore,
    destination: str | Path | IO[str],
    *,
    user_id: str,
    agent_id: str,
    conversation_id: str | None = None,
) -> int:
    """Write this user's and agent's episodes as JSONL (one `memorize` record a line).

    Every stored episode is written: one that cannot be read back (stored by another program
    or an older release) is written as stored and logged (`episode_record` says how).
    """
    ascii_only = False
    if not isinstance(destination, str | Path):
        # Checked before the first episode is read: with none to write, a wrong destination
        # went unnoticed, and with some it failed on the first write (a raw AttributeError or
        # TypeError) after the file was opened.
        ascii_only = _require_text_writer(destination)
    hits = self.iter_episodes(user_id=user_id, agent_id=agent_id, conversation_id=conversation_id)
    if isinstance(destination, str | Path):
        path = Path(destination)
        try:
            if _is_stream(path):
                # A named pipe or a device (`-o /dev/stdout`, a shell's `>(gzip > x)`): a
                # temp file renamed over it replaced the pipe and its reader got nothing.
                with path.open("w", encoding="utf-8") as fh:
                    return _write_jsonl(fh, hits)
            with atomic_write(path) as fh:
                n = _write_jsonl(fh, hits)
        except OSError as exc:
            raise ValidationError(
                f"cannot write the export file {path}: {exc.strerror or exc}; give a path in "
                "a folder that exists and is writable"
            ) from exc
        return n
    return _write_jsonl(destination, hits, ascii_only=ascii_only)


def _is_stream(path: Path) -> bool:
    """Whether `path` is something to write into, not a file to replace (a pipe, a device)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # not there (made by the write) or not reachable (the write says why)
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def bad_file_error(skipped: list[tuple[int, str]]) -> ImportFileError:
    """The error of a strict import that found bad lines: nothing is imported."""
    return ImportFileError(
        f"{len(skipped)} bad line(s), nothing imported: {bad_lines_summary(skipped)}; fix them "
        "or pass errors='skip' to import the valid lines",
        skipped,
    )


def count_records(source: str | Path | IO[str] | IO[bytes]) -> tuple[int, ImportReport]:
    """How many valid episodes a JSONL export holds, and its bad lines (`import_`'s checks).

    Each episode is let go once checked: `episodex import` counts the file with this before
    it opens the store, so a file with a bad line leaves no new store behind.
    """
    report = ImportReport()
    return sum(1 for _ in _checked_records(source, report)), report


def _checked_records(
    source: str | Path | IO[str] | IO[bytes],
    report: ImportReport,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
) -> Iterator[tuple[int, ConversationEpisode]]:
    """Each valid episode of `source` with its line number; each bad line goes to `report`."""
    _require_reader(source)
    first_line: dict[str, int] = {}  # point id -> the line that named it first
    for number, raw in enumerate(_lines(source), start=1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            report.skipped.append((number, f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
            continue
        if not line.strip():
            continue
        try:
            record = read_json(line)
        except json.JSONDecodeError as exc:
            report.skipped.append((number, f"not JSON: {exc}"))
            continue
        try:
            episode = ConversationEpisode.parse(record)
        except ValidationError as exc:
            report.skipped.append((number, str(exc)))
            continue
        if user_id is not None and episode.user_id != user_id:
            report.skipped.append((number, f"belongs to user {episode.user_id!r}, not {user_id!r}"))
            continue
        if agent_id is not None and episode.agent_id != agent_id:
            report.skipped.append(
                (number, f"belongs to agent {episode.agent_id!r}, not {agent_id!r}")
            )
            continue
        if episode.point_id is not None:
            # Written too, the later line would replace the earlier one without a word.
            earlier = first_line.setdefault(episode.point_id, number)
            if earlier != number:
                report.skipped.append(
                    (number, f"point_id {episode.point_id!r} is already on line {earlier}")
                )
                continue
        yield number, episode


#: How much of an import file is read at a time: the file is never held whole, only the
#: records read from it (and the line being read).
READ_CHUNK = 1 << 16


def _lines(source: str | Path | IO[str] | IO[bytes]) -> Iterator[str | bytes]:
    r"""The lines of `source`, cut at "\n" only, read `READ_CHUNK` at a time.

    Records end at "\n" only: str.splitlines() would also cut at U+2028 or U+0085, which
    json.dumps(ensure_ascii=False) leaves unescaped inside a summary.
    """
    if not isinstance(source, str | Path):
        yield from _split(source.read, None)
        return
    try:
        fh = Path(source).open("rb")  # closed below, after the last line
    except OSError as exc:
        raise _unreadable(source, exc) from exc
    with fh:
        yield from _split(fh.read, source)


def _unreadable(source: str | Path, exc: OSError) -> ValidationError:
    return ValidationError(
        f"cannot read the import file {source}: {exc.strerror or exc}; give the path "
        "of a JSONL file written by export"
    )


def _chunks(read: Callable[..., object], path: str | Path | None) -> Iterator[object]:
    """What `read` gives, `READ_CHUNK` at a time, up to and with the empty end."""
    try:
        try:
            chunk = read(READ_CHUNK)
        except TypeError:
            yield read()  # a reader without a size argument: read whole, as before
            return
        while True:
            yield chunk
            if not chunk:
                return
            chunk = read(READ_CHUNK)
    except OSError as exc:
        if path is None:
            raise
        raise _unreadable(path, exc) from exc


def _split(read: Callable[..., object], path: str | Path | None) -> Iterator[str | bytes]:
    pieces: list[Any] = []  # the line read so far, not yet ended by "\n"
    kind: type[str] | type[bytes] | None = None
    first = True
    for chunk in _chunks(read, path):
        if not isinstance(chunk, str | bytes):
            raise ValidationError(
                f"import_ reads a file of text or bytes, but read() gave {type(chunk).__name__}"
            )
        if kind is None:
            kind = type(chunk)
        elif not isinstance(chunk, kind):
            raise ValidationError("import_ reads a file of text or bytes, not both")
        parts: list[Any] = chunk.split(b"\n") if isinstance(chunk, bytes) else chunk.split("\n")
        for part in parts[:-1]:
            line = kind().join([*pieces, part])
            pieces = []
            yield without_bom(line) if first else line
            first = False
        pieces.append(parts[-1])
    line = (kind or bytes)().join(pieces)
    yield without_bom(line) if first else line


#: Episodes embedded and written at a time by an import.
IMPORT_BATCH = 256


def import_(
    self: EpisodeStore,
    source: str | Path | IO[str] | IO[bytes],
    *,
    errors: Literal["strict", "skip"] = "strict",
    user_id: str | None = None,
    agent_id: str | None = None,
    on_progress: Callable[[int], object] | None = None,
) -> ImportReport:
    """Import a JSONL export (a byte order mark before the first line is skipped).

    The file is read twice: checked first (bad lines, ids another tenant owns), holding no
    episode, then embedded and written `IMPORT_BATCH` episodes at a time under the store's
    write lock (other writes wait for the import). An open file that cannot seek is copied to
    a temporary file as it is checked.

    Args:
        self: The store to import into.
        source: A path, or an open file (text, or bytes: a line that is not UTF-8 is then a
            bad line like any other).
        errors: `strict` imports nothing if any line is bad and raises `ImportFileError`
            listing every bad line; `skip` imports the valid lines and reports the others.
        user_id: If given, every record must belong to this user.
        agent_id: If given, every record must belong to this agent.
        on_progress: Called with the number of episodes embedded so far, after each batch
            of 256 is embedded (before it is written). The import is all or nothing: a
            failure takes back the batches already written and raises.
    """
    if errors not in ("strict", "skip"):
        raise ValidationError(f"errors must be 'strict' or 'skip', got {errors!r}")
    require_callback("on_progress", on_progress)
    # Checked as ids: a wrong one would only turn every line into a bad line.
    if user_id is not None:
        require_id("user_id", user_id)
    if agent_id is not None:
        require_id("agent_id", agent_id)
    _require_reader(source)
    with _rereadable(source) as again:
        report = ImportReport()
        valid = 0
        batch: list[tuple[int, ConversationEpisode]] = []
        for item in _checked_records(again(), report, user_id=user_id, agent_id=agent_id):
            batch.append(item)
            if len(batch) == IMPORT_BATCH:
                valid += _owned(self, batch, report)
                batch = []
        valid += _owned(self, batch, report)
        del batch
        report.skipped.sort()
        if report.skipped and errors == "strict":
            raise bad_file_error(report.skipped)
        bad = {line for line, _ in report.skipped}

        def batches(_store: EpisodeStore) -> Iterator[tuple[list[ConversationEpisode], None]]:
            # The file read again: each line as the check found it, or the import is stopped
            # (and what it wrote taken back) rather than writing what was never checked.
            seen = ImportReport()
            count = 0
            out: list[ConversationEpisode] = []
            for number, episode in _checked_records(
                again(), seen, user_id=user_id, agent_id=agent_id
            ):
                _same_bad_lines(seen, bad)
                if number in bad:
                    continue
                out.append(episode)
                count += 1
                if len(out) == IMPORT_BATCH:
                    yield out, None
                    out = []
            _same_bad_lines(seen, bad)
            if count != valid:
                _changed(None)
            if out:
                yield out, None

        # All or nothing, like memorize_many: a failure after some batches were written takes
        # them back, so importing the same file again neither misses nor doubles an episode.
        report.imported.extend(
            self.write_batches(
                batches,
                writes=-(-valid // IMPORT_BATCH),
                call="import_",
                on_progress=on_progress,
            )
        )
    return report


def _owned(
    self: EpisodeStore, batch: list[tuple[int, ConversationEpisode]], report: ImportReport
) -> int:
    """How many of `batch` no other tenant owns; each one that is goes to `report` as bad."""
    foreign = self.foreign_ids([episode for _, episode in batch]) if batch else {}
    report.skipped.extend((batch[i][0], why) for i, why in foreign.items())
    return len(batch) - len(foreign)


def _same_bad_lines(seen: ImportReport, bad: set[int]) -> None:
    """Raise if the second reading found a bad line the first did not; forget those checked."""
    for line, _ in seen.skipped:
        if line not in bad:
            _changed(line)
    seen.skipped.clear()


def _changed(line: int | None) -> None:
    where = f" (line {line} is not what it was)" if line is not None else ""
    raise ValidationError(
        f"the import file changed while it was imported{where}; nothing of it is imported: "
        "import it again once nothing else writes it"
    )


def _require_reader(source: object) -> None:
    if not isinstance(source, str | Path) and not callable(getattr(source, "read", None)):
        raise ValidationError(f"import_ reads a path or an open file, got {type(source).__name__}")


@contextmanager
def _rereadable(
    source: str | Path | IO[str] | IO[bytes],
) -> Generator[Callable[[], str | Path | IO[str] | IO[bytes]]]:
    """`source` as something to read from its start each time it is called.

    A path is opened again; an open file that can seek goes back to where it was; any other
    (a pipe) is copied to a temporary file as it is read the first time.
    """
    if isinstance(source, str | Path):
        if not _is_stream(Path(source)):
            yield lambda: source
            return
        # A named pipe (`import_("/dev/stdin")`, a shell's `<(...)`) reads once: read again,
        # it gave nothing, and the import failed as if the file had changed.
        try:
            fh = Path(source).open("rb")  # closed below, after the import
        except OSError as exc:
            raise _unreadable(source, exc) from exc
        with fh, _rereadable(fh) as again:
            yield again
        return
    start: int | None = None
    try:
        if callable(getattr(source, "seekable", None)) and source.seekable():
            start = source.tell()
    except (OSError, ValueError):
        start = None
    if start is not None:
        at = start

        def back() -> IO[str] | IO[bytes]:
            source.seek(at)
            return source

        yield back
        return
    spool: list[IO[Any]] = []  # the copy, made by the first read
    try:

        def copy() -> IO[Any]:
            if spool:
                spool[0].seek(0)
                return spool[0]
            return cast(IO[bytes], _Spooling(source, spool))  # read() is all _lines uses

        yield copy
    finally:
        for fh in spool:
            fh.close()


class _Spooling:
    """A reader that copies what it reads of `source` to a temporary file (put in `spool`)."""

    def __init__(self, source: IO[str] | IO[bytes], spool: list[IO[Any]]) -> None:
        self._source = source
        self._spool = spool

    def read(self, *size: int) -> object:
        chunk = cast(object, self._source.read(*size))
        if isinstance(chunk, str | bytes) and chunk:
            if not self._spool:
                self._spool.append(
                    tempfile.TemporaryFile("w+b")
                    if isinstance(chunk, bytes)
                    # Text is kept as read, lone surrogates and all: it is parsed again.
                    else tempfile.TemporaryFile(
                        "w+", encoding="utf-8", errors="surrogatepass", newline=""
                    )
                )
            if isinstance(chunk, bytes) == isinstance(self._spool[0], io.BufferedIOBase):
                self._spool[0].write(chunk)
        return chunk


#: Each export record field and the payload field it is read from.
_RECORD = (
    ("user_id", "user_id"),
    ("agent_id", "agent_id"),
    ("conversation_id", "conversation_id"),
    ("short_summary", "short_summary_text"),
    ("long_summary", "long_summary_text"),
    ("start_index", "start_index"),
    ("end_index", "end_index"),
    ("overlap", "overlap"),
    ("flows_activated", "flows_activated"),
    ("tools_invoked", "tools_invoked"),
    ("speakers", "speakers"),
    ("timestamp_begin", "timestamp_begin"),
    ("timestamp_end", "timestamp_end"),
    ("average_user_sentiment", "average_user_sentiment"),
    ("user_sentiment_variance", "user_sentiment_variance"),
    ("metadata", "metadata"),
)


def episode_record(hit: Hit) -> dict[str, Any]:
    """A stored episode as the JSON record `memorize` (and import) accepts.

    An episode that cannot be read back (written by another program or an older release) is
    written as stored, so an export never loses it: a time no `datetime` holds stays the
    stored number, a field of the wrong type stays as it is, a missing field is left out;
    importing the file reports its line as a bad line, saying what is wrong with it.
    """
    p = hit.payload
    problem = payload_problem(p, [field for _, field in _RECORD])
    if problem is not None:
        report_unreadable("episode", hit.id, problem, done="export writes it as stored")
    record: dict[str, Any] = {"point_id": hit.id}
    for name, field_ in _RECORD:
        if field_ not in p:
            if problem is None:
                # An older payload without this field: written as memorize defaults it.
                record[name] = missing_default(p, field_)
            continue
        value = p[field_]
        when = readable_time(value) if field_ in ("timestamp_begin", "timestamp_end") else None
        record[name] = when.isoformat() if when is not None else value
    return record


def _require_text_writer(destination: object) -> bool:
    """`destination` must be a file open for text: JSONL records are written as `str`.

    Returns whether the records must be written in ASCII: the file's encoding is not UTF-8.
    """
    if not callable(getattr(destination, "write", None)):
        raise ValidationError(
            f"export writes to a path or a file open for writing, got {type(destination).__name__}"
        )
    if isinstance(destination, io.RawIOBase | io.BufferedIOBase) or "b" in str(
        getattr(destination, "mode", "")
    ):
        raise ValidationError(
            "export writes text: open the file in text mode ('w', encoding='utf-8'), or give "
            "its path"
        )
    encoding = getattr(destination, "encoding", None)
    if not isinstance(encoding, str):
        return False  # a stream of str (StringIO): its text is kept as is
    try:
        name = codecs.lookup(encoding).name
        if name in ("utf-8", "utf-8-sig"):  # a byte order mark first: import_ skips it
            return False
        ascii_compatible = "{}\n".encode(encoding) == b"{}\n"
    except (LookupError, UnicodeError):
        ascii_compatible = False
    if not ascii_compatible:
        # import_ reads UTF-8: a UTF-16 export could never be read back.
        raise ValidationError(
            f"export writes UTF-8 JSONL, which import_ reads, but the file is open as {encoding}; "
            "open it with encoding='utf-8', or give its path"
        )
    # Another ASCII-compatible encoding (ASCII, Latin-1, cp1252) lacks most characters, and
    # import_ reads UTF-8: the records go in ASCII, other characters as JSON escapes.
    return True


def _write_jsonl(fh: IO[str], hits: Iterable[Hit], *, ascii_only: bool = False) -> int:
    n = 0
    for hit in hits:
        fh.write(json.dumps(episode_record(hit), ensure_ascii=ascii_only) + "\n")
        n += 1
    return n
