"""The last exchange before `Memory.areset()` is kept when the README's recipe is followed.

`Memory.areset()` does not tell its blocks, and the block records a complete exchange only
when `Memory` is next read, so the answer given right before a reset was never seen and the
exchange was lost (chat engines read the memory before answering, not after). The README now
says to call `await block.aflush(memory)` before resetting; this checks that doing so keeps
every exchange, each once.
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


async def test_flushing_before_a_reset_keeps_the_last_exchange(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id="support")
    chat = Memory.from_defaults(
        session_id="chat-flush-reset",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )

    async def turn(n: int) -> None:
        await chat.aput(ChatMessage(role="user", content=f"question {n}"))
        await chat.aget()  # a chat engine reads the memory before it answers
        await chat.aput(ChatMessage(role="assistant", content=f"answer {n}"))

    await turn(0)
    await turn(1)  # its answer is not read back before the reset
    await block.aflush(chat)
    await chat.areset()
    await turn(2)
    await block.aflush(chat)

    episodes = await memory.read_recent(
        100, user_id=user, agent_id="support", conversation_id="chat-flush-reset"
    )
    assert sorted(str(e["long_summary_text"]) for e in episodes) == [
        f"user: question {n}\nassistant: answer {n}" for n in range(3)
    ]
