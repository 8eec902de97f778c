"""The `episodex` command line: demo, add, import, recall, export, stats, forget, reindex.

Exit codes: 0 success, 1 engine or embedding failure (or `forget --all` not confirmed at a
terminal), 2 bad usage or invalid input, 3 not found (no store at the path or on the server, no
such episode), 4 store locked by another process, 130 interrupted, 141 output closed early
(`episodex export | head`), as a pipe writer killed by SIGPIPE would.

The global flags (`--path`, `--url`, `--qdrant-api-key`, `--grpc`, `--json`) go before or
after the command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from episodex._cli.render import recall_lines, stats_table
from episodex._common.errors import (
    EpisodexError,
    ImportFileError,
    NotFoundError,
    StoreLockedError,
    ValidationError,
)
from episodex._common.paths import STORE_ENV, default_store_path
from episodex._common.validation import read_json
from episodex._episodes.options import RecallOptions

if TYPE_CHECKING:
    from episodex._episodes.memory import EpisodicMemory
    from episodex._episodes.model import ConversationEpisode
    from episodex._episodes.transfer import ImportReport

__all__ = ["main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_LOCKED = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141

R = TypeVar("R")

#: Commands that only read or delete: on a folder or a server without a store they exit 3,
#: creating nothing.
_NEEDS_STORE = frozenset({"recall", "export", "stats", "forget", "reindex"})

#: `recall` flags: each sets the `RecallOptions` key of the same meaning.
_RECALL_FLAGS: tuple[tuple[str, str, type[int] | type[float]], ...] = (
    ("--same-limit", "same_conversation_limit", int),
    ("--previous-limit", "previous_conversation_limit", int),
    ("--short-weight", "short_weight", float),
    ("--long-weight", "long_weight", float),
    ("--bm25-weight", "bm25_weight", float),
    ("--splade-weight", "splade_weight", float),
    ("--splade-short-weight", "splade_short_weight", float),
    ("--dated-weight", "dated_weight", float),
    ("--speaker-weight", "speaker_weight", float),
    ("--speaker-bm25-weight", "speaker_bm25_weight", float),
    ("--conversation-diversity", "conversation_diversity", float),
    ("--stage1-limit", "stage1_limit", int),
    ("--rrf-k", "rrf_k", int),
)

#: `add` flags that name the episode's owner: with --from-json they fill or must agree.
_ID_FLAGS = (("user", "user_id"), ("agent", "agent_id"), ("conversation", "conversation_id"))


def _json_default(value: object) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _dump(value: Any) -> str:
    text = json.dumps(value, default=_json_default, ensure_ascii=False, indent=2)
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        # A stdout encoding without some character (LC_ALL=C, PYTHONIOENCODING=latin-1):
        # \u escapes are the same JSON in any encoding, where the stream's replacement would
        # not be JSON at all.
        return json.dumps(value, default=_json_default, ensure_ascii=True, indent=2)
    return text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("episodex")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from episodex import __version__

        return __version__


def _global_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The flags every command takes; on a command, they only override what was given."""

    def default(value: object) -> object:
        # On a command's parser, SUPPRESS keeps a flag given before the command from being
        # reset to its default by the command's parser.
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "--path",
        default=default(None),
        help=f"embedded store folder (default: ${STORE_ENV}, else the user's data folder)",
    )
    parser.add_argument(
        "--url",
        default=default(None),
        help="Qdrant server or cluster URL, e.g. http://localhost:6333",
    )
    parser.add_argument(
        "--qdrant-api-key",
        "--api-key",
        dest="qdrant_api_key",
        default=default(None),
        help="the Qdrant server's API key (default: $QDRANT_API_KEY; only with --url)",
    )
    parser.add_argument(
        "--grpc", action="store_true", default=default(False), help="talk gRPC to the server"
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print machine-readable JSON"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="episodex",
        description="Episodic memory for LLM agents: store and recall conversation episodes.",
    )
    parser.add_argument("--version", action="version", version=f"episodex {_version()}")
    _global_flags(parser, top=True)
    common = argparse.ArgumentParser(add_help=False)
    _global_flags(common, top=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, parents=[common])

    demo = command("demo", "memorize a support bot's episodes and recall them")
    demo.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the demo store in DIR (a new or empty folder) instead of a temp folder",
    )

    def ids(p: argparse.ArgumentParser, *, conversation: bool = False) -> None:
        p.add_argument("--user", required=True, help="user id")
        p.add_argument("--agent", required=True, help="agent id")
        if conversation:
            p.add_argument("--conversation", help="conversation id")

    add = command("add", "memorize one episode from flags or a JSON object")
    add.add_argument(
        "--from-json",
        metavar="FILE",
        help="a JSON object with the episode's fields ('-' for stdin); --user, --agent and "
        "--conversation fill in missing ids and must agree with those given",
    )
    add.add_argument("--user")
    add.add_argument("--agent")
    add.add_argument("--conversation")
    add.add_argument("--short", help="short summary")
    add.add_argument("--long", help="long summary")
    add.add_argument("--start", type=int, help="first message index (default 0)")
    add.add_argument("--end", type=int)
    add.add_argument("--overlap", type=int, help="messages shared with the previous episode")
    add.add_argument("--flow", action="append", help="a flow activated (repeatable)")
    add.add_argument("--tool", action="append", help="a tool invoked (repeatable)")
    add.add_argument(
        "--speaker", action="append", help="who spoke, as a question would name them (repeatable)"
    )
    add.add_argument("--sentiment", type=float, help="average user sentiment in [-1, 1]")
    add.add_argument("--variance", type=float, help="user sentiment variance")
    add.add_argument("--metadata", help="a JSON object")

    imp = command("import", "import a JSONL export")
    imp.add_argument("file", help="the .jsonl file ('-' for stdin)")
    imp.add_argument(
        "--skip-errors", action="store_true", help="import valid lines, report the bad ones"
    )

    rec = command("recall", "recall episodes for a query")
    ids(rec, conversation=True)
    rec.add_argument("query", help="the query text")
    # Left out, an option takes the core's default (documented on RecallOptions).
    for flag, option, kind in _RECALL_FLAGS:
        rec.add_argument(flag, dest=option, type=kind, help=f"recall option {option}")
    rec.add_argument(
        "--block", action="store_true", help="print the prompt block instead of a list"
    )
    rec.add_argument("--max-tokens", type=int, help="token budget for --block")

    exp = command("export", "export episodes as JSONL")
    ids(exp, conversation=True)
    exp.add_argument("--output", "-o", help="file to write ('-' or left out: stdout)")

    st = command("stats", "behaviour statistics of a user with an agent")
    ids(st)

    fg = command("forget", "delete an episode, a conversation, or all of a user's episodes")
    ids(fg)
    what = fg.add_mutually_exclusive_group(required=True)
    what.add_argument("--point", help="one episode's point id (exit 3 if there is none)")
    what.add_argument("--conversation", help="a whole conversation")
    what.add_argument("--all", action="store_true", help="everything of this user with this agent")
    fg.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="with --all, do not ask for confirmation (it is asked only at a terminal)",
    )

    ri = command("reindex", "re-embed every episode of the store with another embedder")
    ri.add_argument(
        "--embedder",
        default="default",
        help="'default' for the bundled model, or a fastembed model name",
    )
    ri.add_argument("--batch-size", type=int, default=256, help="episodes per batch")
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _parser()
    args = parser.parse_args(argv)
    # Given empty (a variable that was not set), a place must not mean "the default store":
    # `forget --all` would then delete there.
    # The same for every file or folder given: Path("") is the current folder (`demo --keep`
    # made its store there), and an empty --from-json was read as none given.
    for flag, value in (
        ("--path", args.path),
        ("--url", args.url),
        ("--output", getattr(args, "output", None)),
        ("--keep", getattr(args, "keep", None)),
        ("--from-json", getattr(args, "from_json", None)),
        ("the import file's name", getattr(args, "file", None)),
    ):
        if value is not None and not value.strip():
            parser.error(f"{flag} is empty; give a {'URL' if flag == '--url' else 'path'}")
    if args.path and args.url:
        parser.error("give --path or --url, not both")
    if args.command == "demo":
        # The demo makes its own store: given a place, it ran elsewhere without a word.
        for flag, value in (("--path", args.path), ("--url", args.url)):
            if value is not None:
                parser.error(
                    f"demo does not take {flag}: it makes its own store in a temporary folder; "
                    "give --keep DIR to keep it in DIR"
                )
    if args.qdrant_api_key is None and args.url:
        args.qdrant_api_key = os.environ.get("QDRANT_API_KEY")
    if args.qdrant_api_key is not None and not args.url:
        parser.error("--qdrant-api-key needs --url: an embedded store has no API key")
    if args.grpc and not args.url:
        parser.error("--grpc needs --url")
    if args.command == "recall" and args.max_tokens is not None and not args.block:
        # A budget the list does not take: the user would think it capped something.
        parser.error("--max-tokens is the budget of --block; give --block too")
    return args


def _open(args: argparse.Namespace) -> EpisodicMemory:
    from episodex._episodes.memory import EpisodicMemory

    options: dict[str, Any] = {}
    if args.command == "reindex":
        # Opened with the new embedder; a store built with another is what reindex is for.
        options = {"embedder": None if args.embedder == "default" else args.embedder}
        options["for_reindex"] = True
    if args.url:
        if args.command in _NEEDS_STORE:
            _require_server_store(args)
        return EpisodicMemory(
            url=args.url, qdrant_api_key=args.qdrant_api_key, prefer_grpc=args.grpc, **options
        )
    path = Path(args.path) if args.path else default_store_path()
    if args.command in _NEEDS_STORE:
        from episodex._engines.edge import store_exists

        if not store_exists(path, "episodes"):
            # A mistyped --path must not leave an empty store behind.
            raise NotFoundError(
                f"no store at {path}; check --path (or ${STORE_ENV}), or create one with "
                "'episodex add' or 'episodex import'"
            )
    return EpisodicMemory(path=path, **options)


def _require_server_store(args: argparse.Namespace) -> None:
    """Exit 3 (`NotFoundError`) when the server at `--url` has no episode store.

    Opening the store creates its collection: a read or delete at a mistyped URL must not
    leave an empty one behind, nor answer as if the user had no episodes.
    """
    from episodex._engines.factory import open_engine
    from episodex._engines.qdrant import QdrantClientEngine
    from episodex._episodes.store import COLLECTION

    engine = open_engine(url=args.url, qdrant_api_key=args.qdrant_api_key, prefer_grpc=args.grpc)
    try:
        found = not isinstance(engine, QdrantClientEngine) or engine.has_collection(COLLECTION)
    finally:
        engine.close()
    if not found:
        raise NotFoundError(
            f"no store on the server at --url (no {COLLECTION!r} collection); check --url, or "
            "create one with 'episodex add' or 'episodex import'"
        )


def _stdin() -> IO[str]:
    if sys.stdin is None:  # started with stdin closed (`<&-`)
        raise ValidationError(
            "stdin is closed; pipe the input in, or give a file name instead of '-'"
        )
    return sys.stdin


def _read_bytes(name: str) -> bytes:
    if name == "-":
        buffer = getattr(_stdin(), "buffer", None)
        if buffer is not None:
            return buffer.read()
        # A text stream put in place of stdin (an embedding program, a test).
        return sys.stdin.read().encode("utf-8", "surrogateescape")
    path = Path(name)
    if path.is_dir():
        raise ValidationError(f"{name} is a folder; give the path of a JSONL file")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ValidationError(f"{name}: no such file") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {name}: {exc.strerror or exc}") from None


def _progress(args: argparse.Namespace, total: int, desc: str) -> Any:
    from tqdm import tqdm

    # A bar only for a person watching: not in --json output, logs or pipes.
    return tqdm(
        total=total,
        unit="episode",
        desc=desc,
        file=sys.stderr,
        disable=args.json or not sys.stderr.isatty(),
    )


def _episode_fields(args: argparse.Namespace) -> dict[str, Any]:
    if args.from_json:
        content = [
            flag
            for flag, value in (
                ("--short", args.short),
                ("--long", args.long),
                ("--start", args.start),
                ("--end", args.end),
                ("--overlap", args.overlap),
                ("--flow", args.flow),
                ("--tool", args.tool),
                ("--speaker", args.speaker),
                ("--sentiment", args.sentiment),
                ("--variance", args.variance),
                ("--metadata", args.metadata),
            )
            if value is not None
        ]
        if content:
            raise ValidationError(
                f"{', '.join(content)} cannot be combined with --from-json; put those fields "
                "in the JSON object"
            )
        try:
            # utf-8-sig: a file an editor saved with a byte order mark is still one object.
            raw = _read_bytes(args.from_json).decode("utf-8-sig")
            fields = read_json(raw)
        except UnicodeDecodeError as exc:
            raise ValidationError(f"--from-json is not UTF-8 text: {exc.reason}") from None
        except json.JSONDecodeError as exc:
            raise ValidationError(f"--from-json is not valid JSON: {exc}") from None
        if not isinstance(fields, dict):
            raise ValidationError("--from-json must hold one JSON object")
        fields = cast(dict[str, Any], fields)
        for flag, key in _ID_FLAGS:
            given = getattr(args, flag)
            if given is None:
                continue
            if key in fields and fields[key] != given:
                raise ValidationError(
                    f"--{flag} {given!r} disagrees with {key} {fields[key]!r} in --from-json; "
                    "give one of them"
                )
            fields[key] = given
        return fields
    try:
        metadata = read_json(args.metadata) if args.metadata else {}
    except json.JSONDecodeError as exc:
        raise ValidationError(f"--metadata is not valid JSON: {exc}") from None
    fields = {
        "user_id": args.user,
        "agent_id": args.agent,
        "conversation_id": args.conversation,
        "short_summary": args.short,
        "long_summary": args.long,
        "start_index": 0 if args.start is None else args.start,
        "end_index": args.end,
        "overlap": 0 if args.overlap is None else args.overlap,
        "flows_activated": args.flow or [],
        "tools_invoked": args.tool or [],
        "speakers": args.speaker or [],
        "average_user_sentiment": args.sentiment,
        "user_sentiment_variance": args.variance,
        "metadata": metadata,
    }
    return {k: v for k, v in fields.items() if v is not None}


async def _import(args: argparse.Namespace, mem: EpisodicMemory, source: _Source) -> None:
    total = source.episodes
    with _progress(args, total, "importing") as bar:

        def progress(done: int) -> None:
            bar.update(done - bar.n)

        job = asyncio.ensure_future(
            mem.import_(
                source.open(),
                errors="skip" if args.skip_errors else "strict",
                on_progress=progress,
            )
        )
        try:
            report = await _outlive_interrupt(
                job, "import", lambda r: f"{len(r.imported)} episode(s) imported"
            )
        except ImportFileError as exc:
            raise _cli_advice(exc) from None
    _report_import(args, report)


def _report_import(args: argparse.Namespace, report: ImportReport) -> None:
    if args.json:
        _write(_dump({"imported": len(report.imported), "skipped": report.skipped}))
        return
    _write(f"imported {len(report.imported)} episode(s)")
    for line, why in report.skipped:
        sys.stderr.write(f"skipped line {line}: {why}\n")


class _Source:
    """The file to import, read a chunk at a time (twice: checked, then imported).

    Standard input is copied to a temporary file as it is read: it can be read only once.
    """

    def __init__(self, name: str) -> None:
        self.episodes = 0  # valid episodes found by the check
        self._path: Path | None = None
        self._spool: IO[bytes] | None = None
        stream: IO[bytes] | None = None
        if name != "-":
            path = Path(name)
            if path.is_dir():
                raise ValidationError(f"{name} is a folder; give the path of a JSONL file")
            try:
                fh = path.open("rb")
            except FileNotFoundError:
                raise ValidationError(f"{name}: no such file") from None
            except OSError as exc:
                raise ValidationError(f"cannot read {name}: {exc.strerror or exc}") from None
            if path.is_file():
                fh.close()
                self._path = path
                return
            # A named pipe (/dev/stdin, a shell's `<(...)`) reads once, as stdin does: read
            # again, it gave nothing and "imported 0 episode(s)".
            stream = fh
        from episodex._episodes import transfer

        stdin = _stdin() if stream is None else None
        spool = tempfile.TemporaryFile()  # closed by close()
        try:
            buffer: IO[bytes] | None = stream or getattr(stdin, "buffer", None)
            while chunk := (
                buffer.read(transfer.READ_CHUNK)
                if buffer is not None
                # A text stream put in place of stdin (an embedding program, a test).
                else cast(IO[str], stdin)
                .read(transfer.READ_CHUNK)
                .encode("utf-8", "surrogateescape")
            ):
                spool.write(chunk)
        except BaseException:
            spool.close()
            raise
        finally:
            if stream is not None:
                stream.close()
        self._spool = spool

    def open(self) -> Path | IO[bytes]:
        if self._spool is None:
            assert self._path is not None
            return self._path
        self._spool.seek(0)
        return self._spool

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()


def _check_import(args: argparse.Namespace, source: _Source) -> ImportReport | None:
    """The file read before the store is opened (and so made, at a new path).

    A strict import's bad lines raise. A file with no episode to import (empty, blank, or
    only bad lines with --skip-errors) gives its report: the store is then not opened at all.
    Returns None when there are episodes to import.
    """
    from episodex._episodes.transfer import bad_file_error, count_records

    # Counted, not kept: the import reads the file again, and the check need not hold every
    # episode of it at once.
    episodes, report = count_records(source.open())
    if report.skipped and not args.skip_errors:
        raise _cli_advice(bad_file_error(report.skipped))
    source.episodes = episodes
    return None if episodes else report


def _cli_advice(exc: ImportFileError) -> ImportFileError:
    # The core's advice names its keyword; a CLI user needs the flag.
    message = str(exc).replace("pass errors='skip'", "rerun with --skip-errors")
    return ImportFileError(message, exc.errors)


async def _outlive_interrupt(job: asyncio.Future[R], what: str, done: Callable[[R], str]) -> R:
    """Await a store write; on Ctrl-C, wait for its end and say how it ended, then stop.

    A write cannot stop halfway: interrupted, it goes on in its thread to its end (all of it
    stored, or none), and the store must stay open until then. Exiting without a word would
    leave the user to guess, and doing it again (an import, an add) would then store its
    episodes twice. A second Ctrl-C ends the wait.

    Args:
        job: The write under way.
        what: The command, as the messages name it ("import").
        done: What the finished write did, from its result ("3 episode(s) imported").
    """
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        sys.stderr.write(f"episodex: interrupted; waiting for the {what} under way to end\n")
        try:
            result = await job
        except Exception as exc:
            sys.stderr.write(f"episodex: the {what} failed: {exc}\n")
        else:
            sys.stderr.write(f"episodex: the {what} was finished before stopping: {done(result)}\n")
        raise


async def _recall(args: argparse.Namespace, mem: EpisodicMemory) -> None:
    options = cast(
        RecallOptions,
        {
            option: getattr(args, option)
            for _, option, _ in _RECALL_FLAGS
            if getattr(args, option) is not None
        },
    )
    where: dict[str, Any] = {
        "user_id": args.user,
        "agent_id": args.agent,
        "conversation_id": args.conversation,
        "query": args.query,
    }
    if args.block:
        block = await mem.recall_block(**where, max_tokens=args.max_tokens, **options)
        _write(_dump({"block": block}) if args.json else block)
        return
    res = await mem.recall(**where, **options)
    _write(_dump(res) if args.json else "\n".join(recall_lines(res)))


async def _export(args: argparse.Namespace, mem: EpisodicMemory) -> None:
    where = {"user_id": args.user, "agent_id": args.agent, "conversation_id": args.conversation}
    # '-' is stdout, as it is stdin for `import -` and `add --from-json -`.
    if args.output and args.output != "-":
        n = await mem.export(args.output, **where)
        if args.json:
            _write(_dump({"exported": n, "output": args.output}))
        else:
            sys.stderr.write(f"exported {n} episode(s) to {args.output}\n")
        return
    # The records are the output (JSONL whether or not --json was given), in UTF-8 as the
    # file export and `import` are: a terminal encoding without some character would cut the
    # export short at the first episode holding it.
    stdout = sys.stdout
    if not isinstance(stdout, io.TextIOWrapper):  # a stream put in place of stdout
        await mem.export(stdout, **where)
        stdout.flush()
        return
    encoding, errors = stdout.encoding, stdout.errors
    stdout.reconfigure(encoding="utf-8", errors="strict")
    try:
        await mem.export(stdout, **where)
        stdout.flush()
    finally:
        stdout.reconfigure(encoding=encoding, errors=errors)


async def _forget(args: argparse.Namespace, mem: EpisodicMemory) -> int:
    if args.all and not args.yes and _at_terminal():
        n = await mem.count(user_id=args.user, agent_id=args.agent)
        if not _confirmed(
            f"delete all {n} episode(s) of user {args.user!r} with agent {args.agent!r}? [y/N] "
        ):
            sys.stderr.write(
                "episodex: nothing deleted (not confirmed; --yes skips the question)\n"
            )
            return EXIT_FAILURE
    job = asyncio.ensure_future(
        mem.forget(
            user_id=args.user,
            agent_id=args.agent,
            point_id=args.point,
            conversation_id=args.conversation,
            everything=args.all,
        )
    )
    n = await _outlive_interrupt(job, "forget", lambda n: f"{n} episode(s) deleted")
    if args.point is not None and n == 0:
        raise NotFoundError(
            f"no episode {args.point!r} for user {args.user!r} and agent {args.agent!r}"
        )
    _write(_dump({"deleted": n}) if args.json else f"deleted {n} episode(s)")
    return EXIT_OK


def _at_terminal() -> bool:
    """Whether a person can answer a question: stdin is a terminal (a script's is not)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):  # closed, or no file behind it
        return False


def _confirmed(question: str) -> bool:
    """Ask `question` on stderr (stdout may be a pipe); only "y" or "yes" is a yes."""
    sys.stderr.write(question)
    sys.stderr.flush()
    answer = sys.stdin.readline()  # "" at end of input (Ctrl-D): no
    return answer.strip().lower() in ("y", "yes")


async def _reindex(args: argparse.Namespace, mem: EpisodicMemory) -> None:
    with _progress(args, 0, "reindexing") as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        report = await mem.reindex(batch_size=args.batch_size, on_progress=progress)
    _write(_dump(report.as_dict()) if args.json else report.summary())


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")


async def _command(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from episodex._demo import run_demo

        return await run_demo(args.keep, out=sys.stdout)
    from episodex._episodes.model import ConversationEpisode

    # The input is read and checked before the store is opened: opening creates a store at
    # a new path, and a command that fails on its input must not leave one behind.
    episode = (
        ConversationEpisode.parse(_episode_fields(args), where="episode 0: ")
        if args.command == "add"
        else None
    )
    source = _Source(args.file) if args.command == "import" else None
    try:
        return await _run(args, episode, source)
    finally:
        if source is not None:
            source.close()


async def _run(
    args: argparse.Namespace, episode: ConversationEpisode | None, source: _Source | None
) -> int:
    if source is not None:
        nothing = _check_import(args, source)
        if nothing is not None:
            _report_import(args, nothing)
            return EXIT_OK
    mem = _open(args)
    try:
        if episode is not None:
            job = asyncio.ensure_future(mem.memorize_many([episode]))
            (point_id,) = await _outlive_interrupt(
                job, "add", lambda ids: f"episode stored under point id {', '.join(ids)}"
            )
            _write(_dump({"point_id": point_id}) if args.json else point_id)
        elif source is not None:
            await _import(args, mem, source)
        elif args.command == "stats":
            stats = await mem.stats(user_id=args.user, agent_id=args.agent)
            _write(_dump(stats) if args.json else "\n".join(stats_table(stats)))
        else:
            handlers: dict[str, Callable[[argparse.Namespace, EpisodicMemory], Any]] = {
                "recall": _recall,
                "export": _export,
                "forget": _forget,
                "reindex": _reindex,
            }
            code = await handlers[args.command](args, mem)
            if isinstance(code, int):
                return code
        return EXIT_OK
    finally:
        mem.close()


def _quiet_stdout() -> None:
    # The reader went away: point stdout at /dev/null so the interpreter's final flush does not
    # raise a second BrokenPipeError.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _lenient_stdout() -> Callable[[], None]:
    """Let stdout show what its encoding lacks as escapes; returns what puts it back.

    The answer is printed after the command ran: a character the terminal's encoding lacks
    must not turn a done command into an error (exit 2 said the input was bad).
    """
    stdout = sys.stdout
    if not isinstance(stdout, io.TextIOWrapper) or stdout.errors != "strict":
        return lambda: None
    stdout.reconfigure(errors="backslashreplace")

    def restore() -> None:
        # Putting it back flushes it: output that could not be written was reported already.
        with contextlib.suppress(OSError, ValueError):
            stdout.reconfigure(errors="strict")

    return restore


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parse(argv)
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        # Refused before the command runs: its answer (a new point id, what was deleted)
        # would be lost after it changed the store.
        sys.stderr.write("episodex: error: stdout is closed; send it somewhere (e.g. >/dev/null)\n")
        return EXIT_USAGE
    restore_stdout = _lenient_stdout()
    try:
        return asyncio.run(_command(args))
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except NotFoundError as exc:
        sys.stderr.write(f"episodex: not found: {exc}\n")
        return EXIT_NOT_FOUND
    except StoreLockedError as exc:
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_LOCKED
    except (ValidationError, ValueError) as exc:
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_USAGE
    except EpisodexError as exc:
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_FAILURE
    except ImportError as exc:
        # A dependency missing from a broken install: say which, without a traceback.
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_FAILURE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"episodex: error: {where}{exc.strerror or exc}\n")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        if args.command == "reindex":
            # The log may say the re-index "failed" as the store closed under it: it stopped,
            # nothing is lost, and the next run goes on from where it stopped.
            sys.stderr.write(
                "episodex: interrupted; the re-index stopped with nothing lost: run "
                "`episodex reindex` again to finish it from where it stopped\n"
            )
        return EXIT_INTERRUPTED
    finally:
        restore_stdout()


if __name__ == "__main__":
    sys.exit(main())
