"""Messages given to `EpisodicMemoryBlock.aput` directly, in a session already recorded by `aget`.

`aput(messages)` without `from_short_term_memory` pushes `messages` to the block (LlamaIndex's
`BaseMemoryBlock.aput`: "Push to the memory block"), and the block documents them as recorded
whole. It skipped as many of them as it had recorded of the session's short-term history
(where `Memory` flushes count), so they were lost, and it then counted that history as not
recorded, so the next `aget` stored its exchanges a second time. Now every message given is
recorded, and the short-term history recorded before stays recorded: each message once.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


async def _stored_lines(memory: EpisodicMemory, user: str) -> list[str]:
    """Every message line the store holds for the user, one per stored copy."""
    episodes = await memory.read_recent(1000, user_id=user, agent_id=AGENT)
    return sorted(line for e in episodes for line in e["long_summary_text"].split("\n"))


async def test_messages_given_directly_are_recorded_once_beside_the_history(
    memory: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="s1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[])
    llm.reply = "Refund issued for order 1234."
    await agent.run("My blender from order 1234 arrived broken.", memory=chat)  # pyright: ignore[reportDeprecated]
    llm.reply = "Address updated to 12 Elm Street."
    await agent.run("Ship future orders to 12 Elm Street.", memory=chat)  # pyright: ignore[reportDeprecated]
    # Reading memory for these turns recorded the exchanges, still in short-term memory.
    assert len(await _stored_lines(memory, user)) == 4
    # An exchange from another channel, pushed to the block directly.
    await block.aput(
        [
            ChatMessage(role="user", content="Was the kettle delivered?"),
            ChatMessage(role="assistant", content="Yes, on Monday."),
        ],
        session_id="s1",
    )
    llm.reply = "Invoice sent."
    await agent.run("Please send the invoice.", memory=chat)  # pyright: ignore[reportDeprecated]
    stats = await block.aflush(chat)
    assert (stats.pending, stats.rejected) == (0, 0)
    assert await _stored_lines(memory, user) == [
        "assistant: Address updated to 12 Elm Street.",
        "assistant: Invoice sent.",
        "assistant: Refund issued for order 1234.",
        "assistant: Yes, on Monday.",
        "user: My blender from order 1234 arrived broken.",
        "user: Please send the invoice.",
        "user: Ship future orders to 12 Elm Street.",
        "user: Was the kettle delivered?",
    ]
