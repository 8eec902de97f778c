"""A tool call with a name the store refuses never costs the agent's run its episode.

The middleware stores the tools a run called with its episode (`tools_invoked`), and their
names come from the model's output: a hallucinated name longer than an id may be (512
characters) made the store reject the whole episode, which is never retried, so the run was
lost (only counted as `rejected`). Such names are now left out; the run is recorded.
"""

from __future__ import annotations

import uuid

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel

HALLUCINATED = "lookup_" + "order" * 120


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return f"Order {order_id} shipped on Monday."


async def test_an_odd_tool_name_is_left_out_not_the_run(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    model = RecordingChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[
                    {"name": HALLUCINATED, "args": {"order_id": "1234"}, "id": "call-1"},
                    {"name": "lookup_order", "args": {"order_id": "1234"}, "id": "call-2"},
                ],
            ),
            AIMessage("Your order 1234 shipped on Monday."),
        ],
        received=[],
    )
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
    agent = create_agent(model, tools=[lookup_order], middleware=[middleware])

    out = await agent.ainvoke(
        {"messages": [HumanMessage("Where is my order 1234?")]},  # pyright: ignore[reportArgumentType]
        config={"configurable": {"thread_id": "t1"}},  # pyright: ignore[reportArgumentType]
    )

    assert out["messages"][-1].text == "Your order 1234 shipped on Monday."
    assert middleware.recorder is not None
    stats = middleware.recorder.stats()
    assert (stats.recorded, stats.rejected) == (1, 0)
    [episode] = (await memory.recall(user_id=user, agent_id="support", query="order 1234"))[
        "previous_conversations"
    ]
    assert episode["tools_invoked"] == ["lookup_order"]
