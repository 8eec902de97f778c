"""A reflection model whose answer holds half a character (a lone surrogate).

A model can answer with half an emoji (a provider cut its stream by UTF-16 units). The
middleware stored the answer as the episode's summaries, the store refused the lone
surrogate, and the run was rejected: the turn was lost from memory for one bad character of
a summary. The half character is now read as U+FFFD, as the exchange's own text is, and the
run is recorded with the model's summaries.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory as Episodes
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel


async def test_a_reflection_with_half_a_character_still_records_the_run(memory: Episodes) -> None:
    user = f"u-{uuid.uuid4().hex}"
    reflector = RecordingChatModel(
        responses=[AIMessage("Order 1234 \ud83d asked.\nThe agent said \udc00 Monday.")]
    )
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", user_id=user, reflection_model=reflector
    )
    agent = create_agent(
        RecordingChatModel(responses=[AIMessage("Shipped on Monday.")]), middleware=[middleware]
    )
    request: Any = {"messages": [HumanMessage("Where is my order 1234?")]}
    out = await agent.ainvoke(request)
    assert out["messages"][-1].text == "Shipped on Monday."
    assert await middleware.aflush() == 0
    [episode] = memory.store.read_recent(5, user_id=user, agent_id="support")
    assert episode["short_summary_text"] == "Order 1234 \ufffd asked."
    assert episode["long_summary_text"] == "The agent said \ufffd Monday."
    stats = middleware.stats()
    assert stats is not None and stats.rejected == 0 and stats.recorded == 1
