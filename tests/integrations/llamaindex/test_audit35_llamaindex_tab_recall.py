"""A tab of a LlamaIndex session recalls what the session's other tab said.

Two browser tabs of one chat hold a `Memory` each under one session id and share one
`EpisodicMemoryBlock`. The block leaves out of recall the episodes whose messages are in the
tab's short-term memory (`seen_from`); after a switch back to a tab, that window reached back
over the other tab's newest episodes, which this tab never saw: they were never recalled to
it. The window now begins where the tab's own messages are recorded since it came back.
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


def _memory(session: str, block: EpisodicMemoryBlock, engine: AsyncEngine) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=engine,
    )


async def test_a_tab_recalls_what_the_other_tab_said_after_it_last_looked(
    memory: EpisodicMemory, user: str
) -> None:
    session = "chat-tab-recall"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    engines = [create_async_engine("sqlite+aiosqlite:///:memory:") for _ in range(2)]
    a, b = (_memory(session, block, engine) for engine in engines)
    try:
        for chat, said in [
            (a, "my parcel number is 4471 and it is late"),
            (a, "the courier is called Fastline"),
            (b, "please send the refund for order 9913 to my bank"),
            (b, "my bank is Northbank in Leeds"),
        ]:
            await chat.aput(ChatMessage(role="user", content=said))
            await chat.aget()
            await chat.aput(ChatMessage(role="assistant", content="Noted."))
        # Tab a again: what tab b said is in no prompt of tab a.
        await a.aput(ChatMessage(role="user", content="where should the refund for order 9913 go?"))
        shown = await a.aget()
    finally:
        for engine in engines:
            await engine.dispose()

    text = "\n".join(str(m.content) for m in shown)
    assert "Northbank" in text or "refund for order 9913 to my bank" in text, text
