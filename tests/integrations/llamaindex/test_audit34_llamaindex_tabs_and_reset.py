"""Two `Memory` objects of one session share a block; held messages meet `Memory.areset()`.

Two browser tabs of one chat each hold a `Memory` with the same session id and their own
short-term history, and use one `EpisodicMemoryBlock` in turn. The block took each switch for
a replaced history (`Memory.areset()`), so the other tab's recorded messages were stored again
at new indexes whenever its history came back.

Messages `Memory` flushes before their exchange ended wait in the block for the exchange's end.
After `Memory.areset()` that end never comes: they were stored in one episode with the first
exchange after the reset, two unrelated exchanges merged.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


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


async def _stored(memory: EpisodicMemory, user: str, session: str) -> dict[int, str]:
    """Every stored message line by its index; fails if an index is stored twice."""
    items = await memory.read_recent(1000, user_id=user, agent_id=AGENT, conversation_id=session)
    stored: dict[int, str] = {}
    for item in items:
        lines = str(item["long_summary_text"]).split("\n")
        assert len(lines) == item["end_index"] - item["start_index"] + 1
        for offset, line in enumerate(lines):
            index = item["start_index"] + offset
            assert index not in stored, f"index {index} stored twice"
            stored[index] = line
    return stored


@pytest.mark.parametrize("small", [False, True], ids=["no-flush", "flushing"])
async def test_two_tabs_of_one_session_store_every_message_once(
    memory: EpisodicMemory, user: str, *, small: bool
) -> None:
    session = "chat-tabs"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    limits = (
        {"token_limit": 400, "chat_history_token_ratio": 0.3, "token_flush_size": 20}
        if small
        else {}
    )
    engines = [create_async_engine("sqlite+aiosqlite:///:memory:") for _ in range(2)]
    tabs = {
        name: _memory(session, block, engine, **limits)
        for name, engine in zip("ab", engines, strict=True)
    }
    expected: list[str] = []
    try:
        for n in range(6):
            for name, chat in tabs.items():
                question = f"question {n} from tab {name} about the parcel and the courier"
                answer = f"answer {n} to tab {name}: the parcel left the depot today"
                await chat.aput(ChatMessage(role="user", content=question))
                await chat.aget()  # what an agent does before answering
                await chat.aput(ChatMessage(role="assistant", content=answer))
                expected += [f"user: {question}", f"assistant: {answer}"]
        for chat in tabs.values():
            await block.aflush(chat)
        stored = await _stored(memory, user, session)
    finally:
        for engine in engines:
            await engine.dispose()

    assert sorted(stored.values()) == sorted(expected)
    assert sorted(stored) == list(range(len(expected)))
    assert block.stats().pending == 0


@pytest.mark.parametrize("flush_first", [False, True], ids=["reset", "flush-then-reset"])
async def test_messages_held_at_a_reset_are_not_merged_with_the_next_exchange(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine, *, flush_first: bool
) -> None:
    session = f"chat-held-reset-{flush_first}"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = _memory(
        session,
        block,
        chat_engine,
        token_limit=80,
        chat_history_token_ratio=0.3,
        token_flush_size=20,
    )
    # A question left without an answer (the agent failed), then the next one: Memory
    # flushes the first while the exchange (up to an answer) has not ended.
    await chat.aput(ChatMessage(role="user", content="question 0 about the parcel and the courier"))
    await chat.aget()
    await chat.aput(ChatMessage(role="user", content="question 1 about the invoice and the refund"))
    await chat.aget()
    await chat.aput(ChatMessage(role="assistant", content="answer 1 the refund was sent today"))
    if flush_first:
        await block.aflush(chat)  # the README's recipe before a reset
    else:
        # Without it the last exchange is lost (README); the flushed question is not.
        assert [m.content for m in block._held[session]] == [  # pyright: ignore[reportPrivateUsage]
            "question 0 about the parcel and the courier"
        ]
    await chat.areset()
    await chat.aput(ChatMessage(role="user", content="question 2 about the weather forecast"))
    await chat.aget()
    await chat.aput(ChatMessage(role="assistant", content="answer 2 it will rain tomorrow"))
    await block.aflush(chat)

    episodes = await memory.read_recent(100, user_id=user, agent_id=AGENT, conversation_id=session)
    texts = sorted(str(e["long_summary_text"]) for e in episodes)
    after = "user: question 2 about the weather forecast\nassistant: answer 2 it will rain tomorrow"
    assert after in texts, texts
    assert "\n".join(texts).count("question 0") == 1
    assert "\n".join(texts).count("question 2") == 1
