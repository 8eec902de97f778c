"""A run's episode holds that run's messages only, whatever the run before it ended with.

A run of `create_agent` can end with tool results instead of a model message: a tool made
with `return_direct=True`, or a structured response given through a tool (`ToolStrategy`).
On a checkpointed thread the next run's episode then began at those tool results: the
previous turn's answer was recorded a second time, in the next turn's episode, and the two
episodes' message ranges overlapped.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import RecordingChatModel
from pydantic import BaseModel


@tool(return_direct=True)
def order_status(order_id: str) -> str:
    """Look up an order's status."""
    return f"Order {order_id} shipped on Monday."


class Seat(BaseModel):
    """The seat the user has."""

    seat: str


def _episodes(memory: EpisodicMemory, user: str) -> list[dict[str, Any]]:
    items = memory.store.read_recent(10, user_id=user, agent_id="support")
    return sorted(items, key=lambda e: e["start_index"])


def _second_turn_is_its_own(
    memory: EpisodicMemory, user: str, first_answer: str, second_question: str
) -> None:
    first, second = _episodes(memory, user)
    assert first_answer in first["long_summary_text"]
    assert first_answer not in second["long_summary_text"]
    assert second["long_summary_text"].startswith(f"user: {second_question}")
    assert first["end_index"] < second["start_index"]


def test_a_turn_after_a_return_direct_tool_is_recorded_without_it(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    call = {"name": "order_status", "args": {"order_id": "1234"}, "id": "call-1"}
    model = RecordingChatModel(
        responses=[AIMessage("", tool_calls=[call]), AIMessage("Your seat is 12A.")]
    )
    agent = create_agent(
        model,
        tools=[order_status],
        middleware=[EpisodicMemoryMiddleware(memory, user_id=user, agent_id="support")],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"t-{user}"}}
    agent.invoke({"messages": [HumanMessage("Where is order 1234?")]}, config=config)
    agent.invoke({"messages": [HumanMessage("Which seat do I have?")]}, config=config)
    _second_turn_is_its_own(memory, user, "Order 1234 shipped on Monday.", "Which seat do I have?")


async def test_a_turn_after_a_structured_response_is_recorded_without_it(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    call = {"name": "Seat", "args": {"seat": "12A"}, "id": "call-1"}
    model = RecordingChatModel(
        responses=[
            AIMessage("", tool_calls=[call]),
            AIMessage("", tool_calls=[{**call, "args": {"seat": "14C"}, "id": "call-2"}]),
        ]
    )
    agent = create_agent(
        model,
        response_format=ToolStrategy(Seat),
        middleware=[EpisodicMemoryMiddleware(memory, user_id=user, agent_id="support")],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"t-{user}"}}
    first = await agent.ainvoke({"messages": [HumanMessage("Book me seat 12A.")]}, config=config)
    assert first["structured_response"] == Seat(seat="12A")
    await agent.ainvoke({"messages": [HumanMessage("Move me to seat 14C.")]}, config=config)
    _second_turn_is_its_own(memory, user, "seat='12A'", "Move me to seat 14C.")
