"""A run cancelled while it is being recorded is recorded whole or not at all, never in part.

A long run becomes several episodes, each summarised by the reflection model. Cancelled
between two of them (a reflection call that times out, `asyncio.wait_for` around the agent),
the first part was already stored and the rest never: a run half in memory, and a retry of
the run stored the first part twice.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from episodex import EpisodicMemory
from episodex.testing import StallingModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel

LONG_ANSWER = " ".join(
    f"Step {i}: check the parcel label, the courier tracking and the invoice." for i in range(120)
)


async def test_cancelled_recording_stores_the_run_whole_or_not_at_all(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    reflection = StallingModel(2, reply="Summary {n}\nThe user asked about a broken blender.")
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", conversation_id="c1", reflection_model=reflection
    )
    agent = create_agent(
        RecordingChatModel(responses=[AIMessage(LONG_ANSWER), AIMessage(LONG_ANSWER)]),
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    question: dict[str, Any] = {"messages": [HumanMessage("My blender arrived broken.")]}
    run = asyncio.create_task(agent.ainvoke(question, context={"user_id": user}))  # pyright: ignore[reportArgumentType]
    await reflection.stalled.wait()
    run.cancel()
    try:
        await run
    except asyncio.CancelledError:
        pass
    assert await middleware.aflush() == 0
    # Cancelled before every part had its summaries: nothing of the run is stored.
    assert await memory.count(user_id=user, agent_id="support") == 0

    # The retried run is stored once, every part of it.
    await agent.ainvoke(question, context={"user_id": user})  # pyright: ignore[reportArgumentType]
    assert await middleware.aflush() == 0
    items = await memory.read_recent(100, user_id=user, agent_id="support")
    ranges = sorted((e["start_index"], e["end_index"], e["metadata"].get("part")) for e in items)
    assert len(ranges) == len(set(ranges)), f"a part was stored twice: {ranges}"
    parts = [r[2] for r in ranges if r[2] is not None]
    assert len(parts) >= 2 and parts == list(range(1, len(parts) + 1))
