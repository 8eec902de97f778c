"""A query that cannot be encoded (a lone surrogate) is bad input: typed, and no answer is lost.

Such a query made the bundled models fail, and `EpisodicRetriever` logged that as an outage of
the memory and returned no documents. The core now refuses it as a `ValidationError`, which the
retriever raises as it raises any bad input; the agent middleware, as for every failed recall,
goes on without memory and the user gets the model's answer.
"""

from __future__ import annotations

import uuid

import pytest
from episodex import EpisodicMemory, ValidationError
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware, EpisodicRetriever
from lc_fakes import RecordingChatModel

HALF_EMOJI = "where is my refund \ud83d"


async def test_the_retriever_refuses_the_query_with_a_typed_error(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    await memory.memorize(
        short_summary="refund for order 1234",
        long_summary="the user asked for a refund",
        user_id=user,
        agent_id="support",
        conversation_id="c1",
    )
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id="support")
    with pytest.raises(ValidationError, match="query has a lone surrogate"):
        retriever.invoke(HALF_EMOJI)
    with pytest.raises(ValidationError, match="query has a lone surrogate"):
        await retriever.ainvoke(HALF_EMOJI)
    assert [d.page_content for d in retriever.invoke(HALF_EMOJI[:-1])] == ["refund for order 1234"]


def test_the_agent_still_answers(memory: EpisodicMemory) -> None:
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    model = RecordingChatModel(responses=[AIMessage("It was issued on Monday.")], received=[])
    agent = create_agent(model, middleware=[middleware], context_schema=EpisodicContext)
    out = agent.invoke(
        {"messages": [HumanMessage(HALF_EMOJI)]},
        context={"user_id": f"user-{uuid.uuid4().hex}"},  # pyright: ignore[reportArgumentType]
    )
    assert out["messages"][-1].text == "It was issued on Monday."
    assert middleware.recall_failures == 1
