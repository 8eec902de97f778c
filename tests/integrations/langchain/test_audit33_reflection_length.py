"""A reflection model's summaries are held to the span rule's lengths.

The middleware stored a reflection model's answer whole: its first line as the short summary,
the rest as the long one. A model that ran on (a 3,000,000-character answer) gave an episode
whose short summary filled any recall block without a budget and was left out of every block
with one. Every other path caps its summaries (the span rule at 300 and 4,000 characters, the
LlamaIndex block at `short_summary_chars`, `ReflectiveMemory` at `max_reflection_chars`); the
reflection's are now cut to the span rule's lengths, with an ellipsis.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory as Episodes
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel


async def test_a_runaway_reflection_is_cut_to_the_span_rules_lengths(memory: Episodes) -> None:
    user = f"u-{uuid.uuid4().hex}"
    short, long = "Order 1234 asked " * 20_000, "The agent said Monday. " * 20_000
    reflector = RecordingChatModel(responses=[AIMessage(f"{short}\n{long}")])
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
    assert len(episode["short_summary_text"]) <= 300
    assert episode["short_summary_text"].startswith("Order 1234 asked")
    assert episode["short_summary_text"].endswith("…")
    assert len(episode["long_summary_text"]) <= 4000
    assert episode["long_summary_text"].startswith("The agent said Monday.")


async def test_a_reflection_within_the_lengths_is_stored_as_written(memory: Episodes) -> None:
    user = f"u-{uuid.uuid4().hex}"
    reflector = RecordingChatModel(responses=[AIMessage("Order 1234 asked.\nSaid Monday.")])
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", user_id=user, reflection_model=reflector
    )
    agent = create_agent(
        RecordingChatModel(responses=[AIMessage("Shipped on Monday.")]), middleware=[middleware]
    )
    request: Any = {"messages": [HumanMessage("Where is my order 1234?")]}
    await agent.ainvoke(request)
    assert await middleware.aflush() == 0
    [episode] = memory.store.read_recent(5, user_id=user, agent_id="support")
    assert episode["short_summary_text"] == "Order 1234 asked."
    assert episode["long_summary_text"] == "Said Monday."
