"""Turns after `Memory.areset()` are recorded like any others.

`EpisodicMemoryBlock` counted how many short-term messages it had recorded and skipped that
many at the start of the history each time `Memory` was read. `Memory.areset()` empties the
history without telling its blocks, so as many of the new messages were skipped: the first
turns after a reset never reached the store, with no log.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


def _chat(
    memory: EpisodicMemory, user: str, engine: AsyncEngine, session: str
) -> tuple[EpisodicMemoryBlock, Memory]:
    """A LlamaIndex chat memory for `session` with an episodic block recording into `memory`."""
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id="support")
    chat = Memory.from_defaults(
        session_id=session,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=engine,
    )
    return block, chat


async def test_every_turn_before_and_after_a_reset_is_stored_once(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    block, chat = _chat(memory, user, chat_engine, "chat-reset")

    async def turn(n: int) -> None:
        await chat.aput(ChatMessage(role="user", content=f"question {n}"))
        await chat.aget()  # what an agent does before answering
        await chat.aput(ChatMessage(role="assistant", content=f"answer {n}"))

    for n in range(3):
        await turn(n)
    await chat.aget()  # the first three exchanges are recorded, and still in short-term memory
    await chat.areset()
    for n in range(3, 7):
        await turn(n)
    stats = await block.aflush(chat)

    episodes = await memory.read_recent(
        1000, user_id=user, agent_id="support", conversation_id="chat-reset"
    )
    assert sorted(str(e["long_summary_text"]) for e in episodes) == sorted(
        f"user: question {n}\nassistant: answer {n}" for n in range(7)
    )
    # The conversation's message positions go on after the reset instead of starting again.
    assert len({e["start_index"] for e in episodes}) == 7
    assert (stats.pending, stats.recorded) == (0, 7)


async def test_a_reset_then_the_end_of_the_session_records_the_new_messages(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    block, chat = _chat(memory, user, chat_engine, "chat-reset-flush")
    for text in ("question 0", "answer 0", "question 1", "answer 1"):
        role = "user" if text.startswith("question") else "assistant"
        await chat.aput(ChatMessage(role=role, content=text))
    await chat.aget()  # records both exchanges, which stay in short-term memory
    await chat.areset()
    await chat.aput_messages(
        [
            ChatMessage(role="user", content="question 2"),
            ChatMessage(role="assistant", content="answer 2"),
        ]
    )
    await block.aflush(chat)  # the end of the session, with no read since the reset

    episodes = await memory.read_recent(
        1000, user_id=user, agent_id="support", conversation_id="chat-reset-flush"
    )
    assert sorted(str(e["long_summary_text"]) for e in episodes) == [
        "user: question 0\nassistant: answer 0\nuser: question 1\nassistant: answer 1",
        "user: question 2\nassistant: answer 2",
    ]
