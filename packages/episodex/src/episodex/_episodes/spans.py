"""The one rule that turns a span of conversation messages into episodes, for every adapter.

A framework hands over messages (a LlamaIndex flush, a LangChain run); each becomes a
`role: text` line of the long summary, and the user's words, condensed, the short summary. A
span too long for one episode becomes several consecutive episodes, split between messages,
and a single message longer than that is split into parts of its own: the store gets every
character, never a truncated summary. Each episode also lists who spoke in it (each
message's role and, when the framework gives one, the speaker's name), so a recall that
names a speaker ("what did Caroline say") searches their episodes again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from episodex._common.errors import ValidationError
from episodex._common.text import mended
from episodex._common.validation import id_problem, require_int
from episodex._episodes.model import MAX_SPEAKERS

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
    speakers: tuple[str, ...] = ()
    """Who spoke in the episode, in order of first appearance: each message's role, then its
    speaker's name when it has one (`("user", "Caroline", "assistant")`); for
    `ConversationEpisode.speakers`. Messages with blank text (skipped) add no speaker."""


@overload
def message_line(
    role: str,
    text: str,
    *,
    tool_calls: Sequence[str] = (),
    system: bool = False,
    name: None = None,
) -> tuple[str, str]: ...


@overload
def message_line(
    role: str,
    text: str,
    *,
    tool_calls: Sequence[str] = (),
    system: bool = False,
    name: str | None,
) -> tuple[str, str] | tuple[str, str, str]: ...


def message_line(
    role: str,
    text: str,
    *,
    tool_calls: Sequence[str] = (),
    system: bool = False,
    name: str | None = None,
) -> tuple[str, str] | tuple[str, str, str]:
    """One framework message as the `(role, text)` pair `span_episodes` takes.

    Every adapter turns its messages into pairs with this, so a LangChain run and a
    LlamaIndex flush of the same exchange become the same episodes. Tool calls an assistant
    message makes are kept as a `[called a, b]` line; a system prompt becomes blank (it is
    the application's, not the conversation's, and is skipped while its index still counts).

    A speaker's `name` (LangChain's `BaseMessage.name`, LlamaIndex's
    `additional_kwargs["name"]`) makes a `(role, text, name)` triple, so the episode lists it
    among its speakers. The name is the framework's data, often typed by a person: its
    whitespace is collapsed to single spaces, and a name that is then blank or longer than an
    id may be (512 characters) is left out, so an odd name never costs a turn its episode.

    Args:
        role: `user`, `assistant`, `tool`, ... (the framework's role name).
        text: The message's text.
        tool_calls: Names of the tools the message calls.
        system: The message is a system prompt.
        name: The name of the person or agent who wrote the message; never a tool's name.

    Raises:
        ValidationError: The role is not one line of text, the text not a string, or the
            name neither None nor a string.
    """
    _check_pair("message", role, text)
    if name is not None and not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError(f"message: name must be a string or None, got {name!r:.80}")
    if system:
        return role, ""
    text = text.strip()
    if tool_calls:
        # A tool name is the model's text: a line break in one would start a forged line.
        tools = (" ".join(str(tool).split()) for tool in tool_calls)
        text = (text + "\n" if text else "") + "[called " + ", ".join(tools) + "]"
    if name is not None:
        name = " ".join(name.split())
        if id_problem(name) is None:
            return role, text, name
    return role, text


def _check_pair(where: str, role: object, text: object) -> None:
    if not isinstance(role, str) or not role.strip():
        raise ValidationError(f"{where}: role must be a non-blank string, got {role!r}")
    # `role: text` starts a line of the long summary; a break would start a forged one.
    _check_line_id(where, "role", role)
    if not isinstance(text, str):
        raise ValidationError(f"{where}: text must be a string, got {type(text).__name__}")


def _check_name(where: str, name: object) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str):
        raise ValidationError(f"{where}: name must be None or a string, got {name!r:.80}")
    _check_line_id(where, "name", name, hint=" (message_line collapses a name's whitespace)")
    return name


def _check_line_id(where: str, what: str, value: str, *, hint: str = "") -> None:
    """A role or a name must be one line without surrounding spaces, and a valid id.

    Both are stored among the episode's speakers, which the store keeps as ids.
    """
    if len(value.splitlines()) != 1 or value != value.strip():
        raise ValidationError(
            f"{where}: {what} must be one line without surrounding spaces, got {value!r:.80}{hint}"
        )
    problem = id_problem(value)
    if problem is not None:
        raise ValidationError(f"{where}: {what} {problem}")


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


def _indented(text: str) -> str:
    """A message's text with each further line indented by two spaces.

    In a long summary every message starts a line with its role, `role: text`. A text's own
    line break followed by `assistant: ...` would start a line that reads as another message
    (a user's words stored as the assistant's promise, and recalled as one later): each further
    line is indented instead, blank lines are left empty, and every kind of line break
    (CR LF, CR, U+2028, ...) becomes a line feed.
    """
    first, *rest = text.splitlines()
    return "\n".join([first, *("  " + line if line.strip() else "" for line in rest)])


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
    messages: Sequence[tuple[str, str] | tuple[str, str, str | None]],
    *,
    start_index: int = 0,
    max_chars: int = MAX_EPISODE_CHARS,
    short_chars: int = 300,
) -> list[SpanEpisode]:
    """Episodes covering every message of a span, in order, none longer than `max_chars`.

    Each episode lists its speakers: the role of each of its messages and, for a
    `(role, text, name)` triple, the name, in order of first appearance. An episode lists at
    most 64 speakers (what `ConversationEpisode.speakers` holds): a span with more starts a
    new episode, between messages, rather than leave one out.

    Args:
        messages: `(role, text)` pairs or `(role, text, name)` triples (`message_line` makes
            them) in conversation order; those with blank text are skipped (their index
            still counts). A name is None or one line of text, as an id. Half a character
            in a text (a lone surrogate, which no store can keep) is kept as U+FFFD, so the
            message is stored rather than its episode refused.
        start_index: The conversation index of the first message.
        max_chars: Longest long summary of one episode.
        short_chars: Longest short summary (the user's words, condensed; the assistant's when
            the span has no user text).

    Returns:
        The episodes, whose long summaries joined by newlines hold every line of the span:
        each message starts a line, `role: text`, and its further lines (a `[called ...]`
        line among them) are indented by two spaces, so no text can pass for a message.

    Raises:
        ValidationError: A message is not such a pair or triple, or its role, text or name
            is not valid; raised before any episode is made.
    """
    start_index = require_int("start_index", start_index)
    max_chars = require_int("max_chars", max_chars, minimum=100)
    short_chars = require_int("short_chars", short_chars, minimum=20)
    lines: list[_Line] = []
    for offset, message in enumerate(messages):
        if not isinstance(message, tuple) or len(message) not in (2, 3):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"message {offset}: expected a (role, text) pair or a (role, text, name) "
                f"triple, got {message!r:.200}"
            )
        role, text = message[0], message[1]
        _check_pair(f"message {offset}", role, text)
        name = _check_name(f"message {offset}", message[2] if len(message) == 3 else None)
        # A part header must leave room for at least half an episode of the message, or the
        # splitter would cut empty pieces forever.
        if len(role) > max_chars // 2 - _PART_HEADER_CHARS:
            raise ValidationError(
                f"message {offset}: role is {len(role)} characters; with max_chars={max_chars} "
                f"it may have at most {max(0, max_chars // 2 - _PART_HEADER_CHARS)}"
            )
        if text.strip():
            who = (role,) if name is None or name == role else (role, name)
            lines.append(_Line(start_index + offset, role, _indented(mended(text.strip())), who))
    episodes: list[SpanEpisode] = []
    group: list[_Line] = []
    size = 0
    heard: dict[str, None] = {}  # the group's speakers, in order of first appearance

    def close() -> None:
        nonlocal group, size, heard
        if group:
            episodes.append(_episode(group, tuple(heard), short_chars))
        group, size, heard = [], 0, {}

    for entry in lines:
        index, role, text = entry.index, entry.role, entry.text
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
                    SpanEpisode(
                        short,
                        long,
                        index,
                        index,
                        part=number,
                        parts=len(pieces),
                        speakers=entry.speakers,
                    )
                )
            continue
        new = [speaker for speaker in entry.speakers if speaker not in heard]
        # Too many speakers for one stored episode: the next one starts here, between
        # messages, so none is left out of the list a speaker's recall filters on.
        if size + len(line) + 1 > max_chars or len(heard) + len(new) > MAX_SPEAKERS:
            close()
        group.append(_Line(index, role, line, entry.speakers))
        heard.update(dict.fromkeys(entry.speakers))
        size += len(line) + 1
    close()
    return episodes


@dataclass(frozen=True, slots=True)
class _Line:
    """One message with text: its conversation index, role, text (or line) and speakers."""

    index: int
    role: str
    text: str
    speakers: tuple[str, ...]


def _episode(group: list[_Line], speakers: tuple[str, ...], short_chars: int) -> SpanEpisode:
    long = "\n".join(entry.text for entry in group)
    said = [entry.text.split(": ", 1)[1] for entry in group if entry.role == "user"]
    short = _condense(" / ".join(said) if said else group[0].text, short_chars)
    return SpanEpisode(short, long, group[0].index, group[-1].index, speakers=speakers)
