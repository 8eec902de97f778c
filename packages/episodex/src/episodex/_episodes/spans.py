"""The one rule that turns a span of conversation messages into episodes, for every adapter.

A framework hands over messages (a LlamaIndex flush, a LangChain run); each becomes a
`role: text` line of the long summary, and the user's words, condensed, the short summary. A
span too long for one episode becomes several consecutive episodes, split between messages,
and a single message longer than that is split into parts of its own: the store gets every
character, never a truncated summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from episodex._common.errors import ValidationError
from episodex._common.validation import require_int

__all__ = ["MAX_EPISODE_CHARS", "SpanEpisode", "message_line", "span_episodes"]

MAX_EPISODE_CHARS = 4000
"""Longest long summary one episode holds by default (about 1,000 tokens)."""


@dataclass(frozen=True, slots=True)
class SpanEpisode:
    """The texts and message range of one episode made from a span of messages."""

    short_summary: str
    long_summary: str
    start_index: int
    end_index: int
    part: int | None = None
    """For one message split into several episodes: which part (from 1); else None."""
    parts: int | None = None
    """For one message split into several episodes: how many parts."""


def message_line(
    role: str, text: str, *, tool_calls: Sequence[str] = (), system: bool = False
) -> tuple[str, str]:
    """One framework message as the `(role, text)` pair `span_episodes` takes.

    Every adapter turns its messages into pairs with this, so a LangChain run and a
    LlamaIndex flush of the same exchange become the same episodes. Tool calls an assistant
    message makes are kept as a `[called a, b]` line; a system prompt becomes blank (it is
    the application's, not the conversation's, and is skipped while its index still counts).

    Args:
        role: `user`, `assistant`, `tool`, ... (the framework's role name).
        text: The message's text.
        tool_calls: Names of the tools the message calls.
        system: The message is a system prompt.
    """
    _check_pair("message", role, text)
    if system:
        return role, ""
    text = text.strip()
    if tool_calls:
        # A tool name is the model's text: a line break in one would start a forged line.
        names = (" ".join(str(name).split()) for name in tool_calls)
        text = (text + "\n" if text else "") + "[called " + ", ".join(names) + "]"
    return role, text


def _check_pair(where: str, role: object, text: object) -> None:
    if not isinstance(role, str) or not role.strip():
        raise ValidationError(f"{where}: role must be a non-blank string, got {role!r}")
    if len(role.splitlines()) != 1 or role != role.strip():
        # `role: text` starts a line of the long summary; a break would start a forged one.
        raise ValidationError(
            f"{where}: role must be one line without surrounding spaces, got {role!r}"
        )
    if not isinstance(text, str):
        raise ValidationError(f"{where}: text must be a string, got {type(text).__name__}")


#: Characters of a part header besides the role (` (part 12345/12345): `), counted generously.
_PART_HEADER_CHARS = 23


def _condense(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def _pieces(text: str, size: int) -> list[str]:
    """`text` in consecutive pieces of at most `size` characters, cut at spaces when possible."""
    pieces: list[str] = []
    while len(text) > size:
        cut = text.rfind(" ", size // 2, size)
        cut = size if cut <= 0 else cut
        pieces.append(text[:cut])
        text = text[cut:]
    pieces.append(text)
    return pieces


def span_episodes(
    messages: Sequence[tuple[str, str]],
    *,
    start_index: int = 0,
    max_chars: int = MAX_EPISODE_CHARS,
    short_chars: int = 300,
) -> list[SpanEpisode]:
    """Episodes covering every message of a span, in order, none longer than `max_chars`.

    Args:
        messages: `(role, text)` pairs in conversation order; pairs with blank text are
            skipped (their index still counts).
        start_index: The conversation index of the first message.
        max_chars: Longest long summary of one episode.
        short_chars: Longest short summary (the user's words, condensed; the assistant's when
            the span has no user text).

    Returns:
        The episodes, whose long summaries joined by newlines hold every line of the span.
    """
    start_index = require_int("start_index", start_index)
    max_chars = require_int("max_chars", max_chars, minimum=100)
    short_chars = require_int("short_chars", short_chars, minimum=20)
    lines: list[tuple[int, str, str]] = []
    for offset, pair in enumerate(messages):
        if not isinstance(pair, tuple) or len(pair) != 2:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"message {offset}: expected a (role, text) pair, got {pair!r}")
        role, text = pair
        _check_pair(f"message {offset}", role, text)
        # A part header must leave room for at least half an episode of the message, or the
        # splitter would cut empty pieces forever.
        if len(role) > max_chars // 2 - _PART_HEADER_CHARS:
            raise ValidationError(
                f"message {offset}: role is {len(role)} characters; with max_chars={max_chars} "
                f"it may have at most {max(0, max_chars // 2 - _PART_HEADER_CHARS)}"
            )
        if text.strip():
            lines.append((start_index + offset, role, text.strip()))
    episodes: list[SpanEpisode] = []
    group: list[tuple[int, str, str]] = []
    size = 0

    def close() -> None:
        nonlocal group, size
        if group:
            episodes.append(_episode(group, short_chars))
        group, size = [], 0

    for index, role, text in lines:
        line = f"{role}: {text}"
        if len(line) > max_chars:
            close()
            head = f"{role} (part {{}}/{{}}): "
            pieces = _pieces(text, max_chars - len(role) - _PART_HEADER_CHARS)
            for number, piece in enumerate(pieces, start=1):
                long = head.format(number, len(pieces)) + piece
                # A part of whitespace only (a run longer than a part) says what it is part of:
                # an empty short summary would have the store refuse that part alone.
                short = _condense(piece, short_chars) or _condense(text, short_chars)
                episodes.append(
                    SpanEpisode(short, long, index, index, part=number, parts=len(pieces))
                )
            continue
        if size + len(line) + 1 > max_chars:
            close()
        group.append((index, role, line))
        size += len(line) + 1
    close()
    return episodes


def _episode(group: list[tuple[int, str, str]], short_chars: int) -> SpanEpisode:
    long = "\n".join(line for _, _, line in group)
    said = [line.split(": ", 1)[1] for _, role, line in group if role == "user"]
    short = _condense(" / ".join(said) if said else group[0][2], short_chars)
    return SpanEpisode(short, long, group[0][0], group[-1][0])
