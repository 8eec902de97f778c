"""Messages of several sessions given to `EpisodicMemoryBlock.aput` in one call, without a session id.

A block with no `conversation_id` takes a message's session from the `session_id` that
`Memory` stamps in its `additional_kwargs`. Given messages stamped by two sessions' `Memory`
(collected from several chats and pushed at once), `aput` took the first stamp it found for
all of them: the second session's turns were stored as the first session's, at its indexes,
and recalled as said there. Now such a call is refused with a `ValidationError` naming the
sessions, and nothing is stored; one session's messages (or an explicit `session_id`) are
recorded as before.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory, ValidationError
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

AGENT = "support"


def _stamped(role: str, text: str, session: str | None) -> ChatMessage:
    message = ChatMessage(role=role, content=text)
    if session is not None:
        message.additional_kwargs["session_id"] = session
    return message


def _two_sessions() -> list[ChatMessage]:
    return [
        _stamped("user", "My blender from order 1234 arrived broken.", "chat-a"),
        _stamped("assistant", "Refund issued for order 1234.", "chat-a"),
        _stamped("user", "Ship future orders to 12 Elm Street.", "chat-b"),
        _stamped("assistant", "Address updated to 12 Elm Street.", "chat-b"),
    ]


@pytest.mark.parametrize("from_short_term_memory", [False, True])
async def test_messages_of_two_sessions_are_refused_not_stored_under_the_first(
    memory: EpisodicMemory, user: str, *, from_short_term_memory: bool
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    with pytest.raises(ValidationError, match=r"chat-a.*chat-b"):
        await block.aput(_two_sessions(), from_short_term_memory=from_short_term_memory)
    await block.recorder.flush()
    assert await memory.read_recent(100, user_id=user, agent_id=AGENT) == []
    # One session's messages, unstamped ones among them, are still recorded under it.
    one = [
        _stamped("user", "Was the kettle delivered?", None),
        _stamped("assistant", "Yes, on Monday.", "chat-b"),
    ]
    await block.aput(one)
    await block.recorder.flush()
    stored = await memory.read_recent(100, user_id=user, agent_id=AGENT)
    assert [(e["conversation_id"], e["start_index"], e["end_index"]) for e in stored] == [
        ("chat-b", 0, 1)
    ]


async def test_an_explicit_session_id_or_block_conversation_takes_all_the_messages(
    memory: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    await block.aput(_two_sessions(), session_id="chat-c")
    fixed = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="chat-d"
    )
    await fixed.aput(_two_sessions())
    await block.recorder.flush()
    await fixed.recorder.flush()
    stored = await memory.read_recent(100, user_id=user, agent_id=AGENT)
    assert sorted((e["conversation_id"], e["start_index"], e["end_index"]) for e in stored) == [
        ("chat-c", 0, 3),
        ("chat-d", 0, 3),
    ]
