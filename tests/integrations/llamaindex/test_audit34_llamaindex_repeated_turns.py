"""A turn that repeats an earlier one is a new turn: stored, never taken as recorded already.

A user answering "yes" twice in a row, a "thanks" said again, a greeting said again after
`Memory.areset()`: each is a turn of its own, whatever the block's history matching
(`_tail`, `_others`, `_pending`, `_cut`) lines up.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
SMALL = {"token_limit": 120, "chat_history_token_ratio": 0.3, "token_flush_size": 20}


def _memory(
    session: str, block: EpisodicMemoryBlock, engine: AsyncEngine, **limits: float
) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=engine,
        **limits,  # pyright: ignore[reportArgumentType]
    )


async def _lines(memory: EpisodicMemory, user: str, session: str) -> list[str]:
    """Every stored message line in index order; fails if an index is stored twice or missing."""
    items = await memory.read_recent(1000, user_id=user, agent_id=AGENT, conversation_id=session)
    stored: dict[int, str] = {}
    for item in items:
        lines = str(item["long_summary_text"]).split("\n")
        for offset, line in enumerate(lines):
            index = item["start_index"] + offset
            assert index not in stored, f"index {index} stored twice"
            stored[index] = line
    assert sorted(stored) == list(range(len(stored)))
    return [stored[i] for i in sorted(stored)]


async def _turn(chat: Memory, question: str, answer: str) -> list[str]:
    await chat.aput(ChatMessage(role="user", content=question))
    await chat.aget()  # what an agent does before answering
    await chat.aput(ChatMessage(role="assistant", content=answer))
    return [f"user: {question}", f"assistant: {answer}"]


@pytest.mark.parametrize("limits", [{}, SMALL], ids=["no-flush", "flushing"])
async def test_the_same_turn_said_again_and_again_is_stored_each_time(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine, limits: dict[str, float]
) -> None:
    session = "chat-repeats"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = _memory(session, block, chat_engine, **limits)
    expected = await _turn(chat, "Can you check my parcel to Lyon please?", "It left today.")
    for _ in range(8):
        expected += await _turn(chat, "yes", "ok")
    expected += await _turn(chat, "thanks", "You are welcome!")
    expected += await _turn(chat, "thanks", "You are welcome!")
    await block.aflush(chat)
    assert await _lines(memory, user, session) == expected


@pytest.mark.parametrize("limits", [{}, SMALL], ids=["no-flush", "flushing"])
async def test_a_turn_said_again_after_a_reset_is_stored(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine, limits: dict[str, float]
) -> None:
    session = "chat-again-after-reset"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = _memory(session, block, chat_engine, **limits)
    expected = await _turn(chat, "hi", "Hello! How can I help?")
    expected += await _turn(chat, "Where is my parcel to Lyon?", "It left the depot today.")
    expected += await _turn(chat, "thanks", "You are welcome!")
    await block.aflush(chat)  # the README's recipe before a reset
    await chat.areset()
    expected += await _turn(chat, "thanks", "You are welcome!")
    expected += await _turn(chat, "hi", "Hello! How can I help?")
    await block.aflush(chat)
    await chat.areset()
    expected += await _turn(chat, "hi", "Hello! How can I help?")
    await block.aflush(chat)
    assert await _lines(memory, user, session) == expected


async def test_a_conversation_begun_again_after_a_reset_is_stored(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    session = "chat-begun-again"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = _memory(session, block, chat_engine, token_limit=400, chat_history_token_ratio=0.3)
    expected = await _turn(chat, "hi", "Hello! How can I help?")
    expected += await _turn(chat, "yes", "ok")
    await block.aflush(chat)  # the README's recipe before a reset
    await chat.areset()
    # The same greeting, then a long question: Memory flushes the greeting before the next
    # read records it.
    expected += await _turn(chat, "hi", "Hello! How can I help?")
    long = "Where is my parcel to Lyon? " * 30
    expected += await _turn(chat, long.strip(), "It left the depot today.")
    await block.aflush(chat)
    assert await _lines(memory, user, session) == expected


async def test_a_greeting_said_again_after_a_reset_is_stored(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    session = "chat-greeting-again"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = _memory(session, block, chat_engine)
    expected = await _turn(chat, "hi", "Hello! How can I help?")
    await block.aflush(chat)  # the README's recipe before a reset
    await chat.areset()
    expected += await _turn(chat, "hi", "Hello! How can I help?")
    expected += await _turn(chat, "Where is my parcel?", "It left the depot today.")
    await block.aflush(chat)
    assert await _lines(memory, user, session) == expected


@pytest.mark.parametrize("limits", [{}, SMALL], ids=["no-flush", "flushing"])
async def test_a_chat_engine_user_saying_yes_again_and_again_is_stored_each_time(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine, limits: dict[str, float]
) -> None:
    session = f"chat-engine-yes-{len(limits)}"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = _memory(session, block, chat_engine, **limits)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=4), memory=chat)
    questions = ["Please check my parcel to Lyon", *(["yes"] * 6), "thanks", "thanks"]
    for question in questions:
        await engine.achat(question)
    await block.aflush(chat)
    lines = await _lines(memory, user, session)
    assert [line for line in lines if line.startswith("user: ")] == [
        f"user: {q}" for q in questions
    ]
    assert len(lines) == 2 * len(questions)
