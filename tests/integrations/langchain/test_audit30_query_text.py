"""A message with half a character (a lone surrogate) still recalls through every LangChain path.

Such a query made the bundled models fail, and `EpisodicRetriever` logged that as an outage of
the memory and returned no documents; the middleware, LCEL, classic memory and memory tool all
recall through it, so that turn went without memory. The core now refuses such a query with a
`ValidationError` (the caller's input); a retriever's query is end-user text, so it reads the
half character as U+FFFD and the rest of the message recalls as usual.
"""

from __future__ import annotations

import uuid

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware, EpisodicRetriever
from lc_fakes import RecordingChatModel

HALF_EMOJI = "where is my refund \ud83d"
REFUND = "refund for order 1234"


async def _seeded(memory: EpisodicMemory) -> str:
    user = f"user-{uuid.uuid4().hex}"
    await memory.memorize(
        short_summary=REFUND,
        long_summary="the user asked for a refund",
        user_id=user,
        agent_id="support",
        conversation_id="c1",
    )
    return user


async def test_the_retriever_reads_half_a_character_as_a_replacement(
    memory: EpisodicMemory,
) -> None:
    user = await _seeded(memory)
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id="support")
    assert [d.page_content for d in retriever.invoke(HALF_EMOJI)] == [REFUND]
    assert [d.page_content for d in await retriever.ainvoke(HALF_EMOJI)] == [REFUND]
    # A whole emoji given as its two halves is read as the emoji.
    assert [d.page_content for d in retriever.invoke(HALF_EMOJI + "\ude00")] == [REFUND]


async def test_the_agent_recalls_and_answers(memory: EpisodicMemory) -> None:
    user = await _seeded(memory)
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    model = RecordingChatModel(responses=[AIMessage("It was issued on Monday.")], received=[])
    agent = create_agent(model, middleware=[middleware], context_schema=EpisodicContext)
    out = await agent.ainvoke(
        {"messages": [HumanMessage(HALF_EMOJI)]},
        context={"user_id": user},  # pyright: ignore[reportArgumentType]
    )
    assert out["messages"][-1].text == "It was issued on Monday."
    assert middleware.recall_failures == 0
    assert REFUND in str(model.received[0])
    # The turn itself is stored, its half character kept as U+FFFD.
    assert middleware.recorder is not None
    await middleware.recorder.flush()
    stored = memory.store.read_recent(5, user_id=user, agent_id="support")
    assert any("where is my refund \ufffd" in e["long_summary_text"] for e in stored)
