"""The `episodex` command line: demo, add, import, recall, export, stats, forget.

Exit codes: 0 success, 1 engine or embedding failure, 2 bad usage or invalid input,
3 not found, 4 store locked by another process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from episodex._common.errors import (
    EpisodexError,
    NotFoundError,
    StoreLockedError,
    ValidationError,
)
from episodex._common.validation import read_json
from episodex._episodes.options import RecallOptions

__all__ = ["main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_LOCKED = 0, 1, 2, 3, 4

#: `recall` flags: each sets the `RecallOptions` key of the same meaning.
_RECALL_FLAGS: tuple[tuple[str, str, type[int] | type[float]], ...] = (
    ("--same-limit", "same_conversation_limit", int),
    ("--previous-limit", "previous_conversation_limit", int),
    ("--short-weight", "short_weight", float),
    ("--long-weight", "long_weight", float),
    ("--bm25-weight", "bm25_weight", float),
    ("--splade-weight", "splade_weight", float),
    ("--stage1-limit", "stage1_limit", int),
    ("--rrf-k", "rrf_k", int),
)


def _json_default(value: object) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _dump(value: Any) -> str:
    return json.dumps(value, default=_json_default, ensure_ascii=False, indent=2)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="episodex",
        description="Episodic memory for LLM agents: store and recall conversation episodes.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--path", help="embedded store folder (default: $EPISODEX_PATH or ./memory)")
    where.add_argument("--url", help="Qdrant server or cluster URL, e.g. http://localhost:6333")
    parser.add_argument(
        "--api-key", default=os.environ.get("QDRANT_API_KEY"), help="Qdrant API key (server)"
    )
    parser.add_argument("--grpc", action="store_true", help="talk gRPC to the server")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="memorize a support bot's episodes and recall them")
    demo.add_argument(
        "--keep", metavar="DIR", help="keep the demo store in DIR instead of a temp folder"
    )

    def ids(
        p: argparse.ArgumentParser, *, conversation: bool = False, required_conv: bool = False
    ) -> None:
        p.add_argument("--user", required=True, help="user id")
        p.add_argument("--agent", required=True, help="agent id")
        if conversation:
            p.add_argument("--conversation", required=required_conv, help="conversation id")

    add = sub.add_parser("add", help="memorize one episode from flags or a JSON object")
    add.add_argument(
        "--from-json",
        metavar="FILE",
        help="a JSON object with the episode's fields ('-' for stdin)",
    )
    add.add_argument("--user")
    add.add_argument("--agent")
    add.add_argument("--conversation")
    add.add_argument("--short", help="short summary")
    add.add_argument("--long", help="long summary")
    add.add_argument("--start", type=int, default=0)
    add.add_argument("--end", type=int)
    add.add_argument("--overlap", type=int, default=0)
    add.add_argument("--flow", action="append", default=[], help="a flow activated (repeatable)")
    add.add_argument("--tool", action="append", default=[], help="a tool invoked (repeatable)")
    add.add_argument("--sentiment", type=float, help="average user sentiment in [-1, 1]")
    add.add_argument("--variance", type=float, help="user sentiment variance")
    add.add_argument("--metadata", help="a JSON object")

    imp = sub.add_parser("import", help="import a JSONL export")
    imp.add_argument("file", help="the .jsonl file ('-' for stdin)")
    imp.add_argument(
        "--skip-errors", action="store_true", help="import valid lines, report the bad ones"
    )

    rec = sub.add_parser("recall", help="recall episodes for a query")
    ids(rec, conversation=True)
    rec.add_argument("query", help="the query text")
    # Left out, an option takes the core's default (documented on RecallOptions).
    for flag, option, kind in _RECALL_FLAGS:
        rec.add_argument(flag, dest=option, type=kind, help=f"recall option {option}")
    rec.add_argument(
        "--block", action="store_true", help="print the prompt block instead of a list"
    )
    rec.add_argument("--max-tokens", type=int, help="token budget for --block")

    exp = sub.add_parser("export", help="export episodes as JSONL")
    ids(exp, conversation=True)
    exp.add_argument("--output", "-o", help="file to write (default: stdout)")

    st = sub.add_parser("stats", help="behaviour statistics of a user with an agent")
    ids(st)

    fg = sub.add_parser(
        "forget", help="delete an episode, a conversation, or all of a user's episodes"
    )
    ids(fg)
    what = fg.add_mutually_exclusive_group(required=True)
    what.add_argument("--point", help="one episode's point id")
    what.add_argument("--conversation", help="a whole conversation")
    what.add_argument("--all", action="store_true", help="everything of this user with this agent")
    return parser


def _open(args: argparse.Namespace) -> Any:
    from episodex._episodes.memory import EpisodicMemory

    if args.url:
        return EpisodicMemory(url=args.url, api_key=args.api_key, prefer_grpc=args.grpc)
    return EpisodicMemory(path=args.path or os.environ.get("EPISODEX_PATH") or "./memory")


def _read_text(name: str) -> str:
    return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")


async def _command(args: argparse.Namespace) -> int:
    out = sys.stdout
    if args.command == "demo":
        from episodex._demo import run_demo

        return await run_demo(args.keep, out=out)

    mem = _open(args)
    try:
        if args.command == "add":
            if args.from_json:
                try:
                    fields = read_json(_read_text(args.from_json))
                except json.JSONDecodeError as exc:
                    raise ValidationError(f"--from-json is not valid JSON: {exc}") from None
                if not isinstance(fields, dict):
                    raise ValidationError("--from-json must hold one JSON object")
            else:
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
                    "start_index": args.start,
                    "end_index": args.end,
                    "overlap": args.overlap,
                    "flows_activated": args.flow,
                    "tools_invoked": args.tool,
                    "average_user_sentiment": args.sentiment,
                    "user_sentiment_variance": args.variance,
                    "metadata": metadata,
                }
                fields = {k: v for k, v in fields.items() if v is not None}
            (point_id,) = await mem.memorize_many([fields])
            out.write(_dump({"point_id": point_id}) + "\n" if args.json else f"{point_id}\n")
        elif args.command == "import":
            from tqdm import tqdm

            text = _read_text(args.file)
            total = sum(1 for line in text.splitlines() if line.strip())
            import io

            with tqdm(
                total=total, unit="episode", desc="importing", file=sys.stderr, disable=args.json
            ) as bar:

                def progress(done: int) -> None:
                    bar.update(done - bar.n)

                report = await mem.import_(
                    io.StringIO(text),
                    errors="skip" if args.skip_errors else "strict",
                    on_progress=progress,
                )
            if args.json:
                out.write(
                    _dump({"imported": len(report.imported), "skipped": report.skipped}) + "\n"
                )
            else:
                out.write(f"imported {len(report.imported)} episode(s)\n")
                for line, why in report.skipped:
                    sys.stderr.write(f"skipped line {line}: {why}\n")
        elif args.command == "recall":
            options = cast(
                RecallOptions,
                {
                    option: getattr(args, option)
                    for _, option, _ in _RECALL_FLAGS
                    if getattr(args, option) is not None
                },
            )
            if args.block:
                block = await mem.recall_block(
                    user_id=args.user,
                    agent_id=args.agent,
                    conversation_id=args.conversation,
                    query=args.query,
                    max_tokens=args.max_tokens,
                    **options,
                )
                out.write(_dump({"block": block}) + "\n" if args.json else block + "\n")
            else:
                res = await mem.recall(
                    user_id=args.user,
                    agent_id=args.agent,
                    conversation_id=args.conversation,
                    query=args.query,
                    **options,
                )
                if args.json:
                    out.write(_dump(res) + "\n")
                else:
                    for key in ("same_conversation", "previous_conversations"):
                        out.write(f"{key.replace('_', ' ')}:\n")
                        for item in res[key]:
                            streams = ", ".join(
                                f"{s} #{v['rank']}" for s, v in item["streams"].items()
                            )
                            out.write(
                                f"  {item['score']:.4f}  [{streams}]  {item['conversation_id']}  "
                                f"{item['point_id']}  {item['short_summary_text']}\n"
                            )
        elif args.command == "export":
            if args.output:
                n = await mem.export(
                    args.output,
                    user_id=args.user,
                    agent_id=args.agent,
                    conversation_id=args.conversation,
                )
                sys.stderr.write(f"exported {n} episode(s) to {args.output}\n")
            else:
                await mem.export(
                    out, user_id=args.user, agent_id=args.agent, conversation_id=args.conversation
                )
        elif args.command == "stats":
            stats = await mem.stats(user_id=args.user, agent_id=args.agent)
            if args.json:
                out.write(_dump(stats) + "\n")
            else:
                for key, value in stats.items():
                    out.write(f"{key}: {value}\n")
        elif args.command == "forget":
            n = await mem.forget(
                user_id=args.user,
                agent_id=args.agent,
                point_id=args.point,
                conversation_id=args.conversation,
                everything=args.all,
            )
            out.write(_dump({"deleted": n}) + "\n" if args.json else f"deleted {n} episode(s)\n")
        return EXIT_OK
    finally:
        mem.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_command(args))
    except NotFoundError as exc:
        sys.stderr.write(f"episodex: not found: {exc}\n")
        return EXIT_NOT_FOUND
    except StoreLockedError as exc:
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_LOCKED
    except (ValidationError, ValueError) as exc:
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_USAGE
    except FileNotFoundError as exc:
        sys.stderr.write(f"episodex: error: {exc.filename}: no such file\n")
        return EXIT_USAGE
    except EpisodexError as exc:
        sys.stderr.write(f"episodex: error: {exc}\n")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
