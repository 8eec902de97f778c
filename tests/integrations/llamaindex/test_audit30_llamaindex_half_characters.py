"""A message with half a character (a lone surrogate) still recalls and is stored, in LlamaIndex.

A client that cuts text by UTF-16 units leaves half an emoji. As a query it made the bundled
models fail (the retriever, the block and the tool went without memory, logged as an outage);
as a message it had the store refuse the episode, so the turn was lost. The core refuses such
text with a `ValidationError`; the adapters' text is end-user text, so they read the half
character as U+FFFD: the rest of the message recalls, and the turn is stored.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    EpisodicRetriever,
    create_memory_search_tool,
    offline_tokenizer,
)
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
HALF_EMOJI = "where is my kettle refund \ud83d"
EARLIER = "The kettle of order 1182 arrived cracked; it was refunded."


async def _seed(memory: EpisodicMemory, user: str) -> None:
    await memory.memorize(
        short_summary="Refund for a broken kettle",
        long_summary=EARLIER,
        user_id=user,
        agent_id=AGENT,
        conversation_id="monday",
    )


async def test_the_retriever_and_the_tool_recall(memory: EpisodicMemory, user: str) -> None:
    await _seed(memory, user)
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT)
    nodes = await retriever.aretrieve(HALF_EMOJI)
    assert "order 1182" in nodes[0].node.get_content()
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT)
    reply = await tool.acall(query=HALF_EMOJI)
    assert "order 1182" in str(reply.content)


async def test_the_block_recalls_and_the_turn_is_stored(
    memory: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    await _seed(memory, user)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="tuesday",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    llm.reply = "It was refunded on Monday."
    await FunctionAgent(llm=llm, tools=[]).run(HALF_EMOJI, memory=chat)  # pyright: ignore[reportDeprecated]
    assert "order 1182" in str(llm.calls[0])
    stored = await memory.read_recent(10, user_id=user, agent_id=AGENT, conversation_id="tuesday")
    assert [e["long_summary_text"] for e in stored] == [
        "user: where is my kettle refund \ufffd\nassistant: It was refunded on Monday."
    ]
