"""LlamaIndex chat messages read as plain text: the query, the exchange, the tools used."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock

from episodex import ValidationError, message_line, require_id

__all__ = [
    "check_messages",
    "latest_user_text",
    "message_lines",
    "message_text",
    "readable",
    "readable_page",
    "recorded_text",
    "session_of",
    "speaker_name",
    "tools_called",
]


def check_messages(messages: object, where: str) -> None:
    """`messages` must be a list of LlamaIndex `ChatMessage`s (`ValidationError` if not).

    Args:
        messages: What a block method was given.
        where: The method, as `Class.method`, for the message.
    """
    if not isinstance(messages, list) or not all(
        isinstance(m, ChatMessage)
        for m in messages  # pyright: ignore[reportUnknownVariableType]
    ):
        raise ValidationError(f"{where} takes a list of ChatMessage, got {messages!r:.80}")


def message_text(message: ChatMessage) -> str:
    """The text blocks of one message, joined; images, audio and tool calls are left out."""
    return "\n".join(block.text for block in message.blocks if isinstance(block, TextBlock)).strip()


# The episodex memory tool's reply: a rendered recall. Stored text is XML-escaped inside it, so
# no episode can close it early or open a line with `<episode `.
_RECALL = r"<recalled_episodes>\n.*?\n</recalled_episodes>"
_TOOL_REPLY = re.compile(_RECALL, re.DOTALL)
# A ReActAgent keeps each tool's reply in its reasoning, as an `Observation:` line.
_OBSERVATION = re.compile(rf"^Observation: ({_RECALL})$", re.DOTALL | re.MULTILINE)


def _recalled(block: str) -> str:
    count = sum(line.startswith("<episode ") for line in block.splitlines())
    return f"[recalled {count} episode{'' if count == 1 else 's'}]"


def recorded_text(message: ChatMessage, *, memory_tool: bool = False) -> str:
    """The text a message is recorded with: recalled episodes in it as a marker.

    Recalled episodes are earlier conversations' texts: recorded as they are, they would be
    recalled as said in this conversation (and stored again after every search). A
    `<recalled_episodes>` block in a tool message (the memory search tool's reply, or part of
    another tool's), and such a block a `ReActAgent` kept as an observation, become
    `[recalled N episodes]`, the rest of the text kept; the reply of a tool the developer
    named as a memory tool (`memory_tool`) becomes `[recalled episodes]` as a whole. Every
    other text is recorded as it is.
    """
    text = message_text(message)
    if message.role == MessageRole.TOOL and _TOOL_REPLY.search(text):
        return _TOOL_REPLY.sub(lambda m: _recalled(m.group(0)), text)
    if message.role == MessageRole.TOOL and memory_tool:
        return "[recalled episodes]"
    if message.role == MessageRole.ASSISTANT and "Observation: <recalled_episodes>" in text:
        return _OBSERVATION.sub(lambda m: f"Observation: {_recalled(m.group(1))}", text)
    return text


def _memory_replies(messages: Sequence[ChatMessage], memory_tools: Collection[str]) -> set[int]:
    """Positions of the tool messages that answer a call of one of `memory_tools`.

    A tool message carries only its call's id: the tool's name is in the assistant message
    that made the call.
    """
    if not memory_tools:
        return set()
    calls = {
        block.tool_call_id
        for message in messages
        for block in message.blocks
        if isinstance(block, ToolCallBlock)
        and block.tool_call_id is not None
        and block.tool_name in memory_tools
    }
    return {
        index
        for index, message in enumerate(messages)
        if message.role == MessageRole.TOOL
        and message.additional_kwargs.get("tool_call_id") in calls
    }


def readable(query: str) -> str:
    """A query with any half character read as U+FFFD.

    A query is end-user text: a client that cuts text by UTF-16 units leaves half an emoji (a
    lone surrogate), which no model can read and the core refuses. Read as the replacement
    character, the rest of the message still recalls.
    """
    return query.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def readable_page(value: Any) -> Any:
    """A page (a mapping of `EnvState` fields) with every text in it `readable`.

    A page is read from a browser or an app, whose text a script may cut by UTF-16 units:
    half a character in one element had the lesson memory refuse the whole page, so the
    agent got no lessons at that step. Other values (an `EnvState`, checked when it was
    made, numbers) are returned as they are.
    """
    if isinstance(value, str):
        return readable(value)
    if isinstance(value, Mapping):
        return {key: readable_page(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return [readable_page(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def latest_user_text(messages: Sequence[ChatMessage] | None) -> str:
    """The text of the newest user message that has any (`readable`), or `""`."""
    for message in reversed(messages or ()):
        if message.role == MessageRole.USER:
            text = message_text(message)
            if text:
                return readable(text)
    return ""


def _storable(name: str) -> bool:
    try:
        require_id("tool name", name)
    except ValidationError:
        return False
    return True


def tools_called(messages: Sequence[ChatMessage]) -> list[str]:
    """Names of the tools the assistant called, in first-call order, each once.

    The names come from the model's output: one the store refuses as an id (blank, or a
    hallucinated name over 512 characters) is left out, or the whole episode would be refused.
    """
    names: list[str] = []
    for message in messages:
        for block in message.blocks:
            if (
                isinstance(block, ToolCallBlock)
                and block.tool_name not in names
                and _storable(block.tool_name)
            ):
                names.append(block.tool_name)
    return names


def speaker_name(message: ChatMessage) -> str | None:
    """Who wrote a message, from `additional_kwargs["name"]`, or None.

    LlamaIndex's OpenAI-style LLMs send `additional_kwargs` as fields of the message, so
    `name` there is the participant's name; on a tool or function message it is the tool's,
    never a speaker.
    """
    if message.role in (MessageRole.TOOL, MessageRole.FUNCTION):
        return None
    name = message.additional_kwargs.get("name")
    return name if isinstance(name, str) else None


def message_lines(
    messages: Sequence[ChatMessage], memory_tools: Collection[str] = ()
) -> list[tuple[str, str] | tuple[str, str, str]]:
    """`(role, text)` per message, index for index, by the core's `message_line` rule.

    A message that names its speaker (`speaker_name`) gives `(role, text, name)`; the replies
    to calls of `memory_tools` are recorded as recalled memory (`recorded_text`).
    """
    replies = _memory_replies(messages, memory_tools)
    return [
        message_line(
            message.role.value,
            recorded_text(message, memory_tool=index in replies),
            tool_calls=[b.tool_name for b in message.blocks if isinstance(b, ToolCallBlock)]
            if message.role == MessageRole.ASSISTANT
            else (),
            system=message.role == MessageRole.SYSTEM,
            name=speaker_name(message),
        )
        for index, message in enumerate(messages)
    ]


def session_of(messages: Sequence[ChatMessage]) -> str | None:
    """The session id `Memory` stamps on messages it flushes, if any message carries one.

    Raises:
        ValidationError: The messages carry different session ids (stamped by several
            sessions' `Memory`): taken from the first, the other sessions' turns were
            stored in its conversation, at its indexes.
    """
    sessions: list[str] = []
    for message in messages:
        value = message.additional_kwargs.get("session_id")
        if isinstance(value, str) and value.strip() and value not in sessions:
            sessions.append(value)
    if len(sessions) > 1:
        shown = ", ".join(repr(s[:80]) for s in sessions[:5])
        raise ValidationError(
            f"the messages carry {len(sessions)} different session ids ({shown}): give each "
            "session's messages in a call of their own, or pass session_id to record them all "
            "under one"
        )
    return sessions[0] if sessions else None
