"""Issue 13's LlamaIndex defects, each checked without the session-end `aflush` call.

Defect 1: with `Memory.from_defaults()` limits nothing was ever recorded. Defect 2: with
`token_limit=4000, token_flush_size=2000` and long turns, flushed turns were clipped and some
ended up neither in short-term memory nor in the store. Both tests fail on the block before
ccd46e8 and pass since.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
WORDS = "refund order parcel invoice address blender kettle courier label warranty".split()


def stored_messages(episodes: list[dict[str, Any]]) -> list[str]:
    """Every message text the store holds, a message split over several episodes joined."""
    episodes = sorted(episodes, key=lambda e: (e["start_index"], e["metadata"].get("part", 0)))
    texts: list[str] = []
    pieces: list[str] = []
    for episode in episodes:
        long, meta = episode["long_summary_text"], episode["metadata"]
        if "part" in meta:
            pieces.append(long.split("): ", 1)[1])
            if meta["part"] == meta["parts"]:
                texts.append("".join(pieces))
                pieces = []
        else:
            texts.extend(line.split(": ", 1)[1] for line in long.split("\n"))
    return texts


async def test_defect1_default_memory_stores_each_exchange_during_the_session(
    memory: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(  # LlamaIndex's defaults: a 30,000-token short-term memory
        session_id="d1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[])
    for question in ("My kettle arrived cracked.", "Send a new one.", "Thanks!"):
        await agent.run(user_msg=question, memory=chat)  # pyright: ignore[reportDeprecated]
    # No flush, no aflush: the two exchanges before the last question are stored already.
    episodes = await memory.read_recent(10, user_id=user, agent_id=AGENT, conversation_id="d1")
    assert len(episodes) >= 2
    assert stored_messages(episodes)[:4] == [
        "My kettle arrived cracked.",
        "Noted.",
        "Send a new one.",
        "Noted.",
    ]


async def test_defect2_every_flushed_turn_is_in_the_store_or_short_term_memory(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    rng = random.Random(13)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="d2",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
        token_limit=4000,
        token_flush_size=2000,
    )
    sent: list[str] = []
    for turn in range(16):
        for role in ("user", "assistant"):
            text = f"{role}{turn} " + " ".join(rng.choice(WORDS) for _ in range(900))
            sent.append(text)
            await chat.aput(ChatMessage(role=role, content=text))
            if role == "user":
                await chat.aget()
    await chat.aget()  # the read that follows the last answer
    active = [str(m.content) for m in await chat.aget_all(status=MessageStatus.ACTIVE)]
    episodes = await memory.read_recent(1000, user_id=user, agent_id=AGENT, conversation_id="d2")
    stored = stored_messages(episodes)
    assert max(len(t) for t in sent) > 4_000  # longer than the old clip limit
    assert len(active) < len(sent)  # Memory did flush
    missing = [i for i, text in enumerate(sent) if text not in stored and text not in active]
    assert missing == [], f"messages neither stored nor in short-term memory: {missing}"
    # Complete exchanges are stored while still in short-term memory; none is stored twice.
    assert len(stored) == len(set(stored)), "a message is stored twice"
