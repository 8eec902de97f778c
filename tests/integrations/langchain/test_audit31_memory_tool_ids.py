"""The memory search tool answers the model when the run's ids cannot be worked out.

`create_memory_search_tool` works out whose memory to search when the model calls it, from
the run (context, `configurable`, `thread_id`). When it could not (no user anywhere, a
`thread_id` longer than the id rule allows, an empty user id in the context), the typed error
was raised out of the tool, and `create_agent`'s tool node re-raises a tool's errors: the run
ended mid-way, after the model's first turn and any tool called beside the search had already
run, and the user got no answer. Now the tool tells the model memory is unavailable (the
reason is logged for the developer), and the agent answers without it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest
from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodicContext, create_memory_search_tool
from lc_fakes import EchoChatModel

AGENT = "concierge"
ANSWER = "Order 7 is refunded."
refunds: list[str] = []


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    refunds.append(order_id)
    return f"Order {order_id} refunded."


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    """First a refund and a memory search side by side, then the answer."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage(ANSWER)
    return AIMessage(
        "",
        tool_calls=[
            {"name": "refund", "args": {"order_id": "7"}, "id": "call-refund"},
            {"name": "search_memory", "args": {"query": "refund order 7"}, "id": "call-search"},
        ],
    )


# (what the run carries, the reason the log names)
_UNWORKABLE: dict[str, tuple[dict[str, Any], str]] = {
    "no user anywhere": ({}, "no user_id"),
    "a thread_id over the id limit": (
        {"context": {"user_id": "alice"}, "config": {"configurable": {"thread_id": "t" * 600}}},
        "thread_id must be at most 512 characters",
    ),
    "an empty user id in the context": ({"context": {"user_id": ""}}, "user_id"),
}


@pytest.fixture(scope="module")
def seeded(memory: EpisodicMemory) -> str:
    # Another user's episode about the very thing searched: it must never be shown.
    other = f"bob-{uuid.uuid4().hex}"
    asyncio.run(
        memory.memorize(
            short_summary="Refund order 7 to Bob's secret card ending 4242",
            long_summary="user: refund order 7",
            user_id=other,
            agent_id=AGENT,
            conversation_id="earlier",
        )
    )
    return other


@pytest.mark.parametrize("how", list(_UNWORKABLE))
@pytest.mark.parametrize("run_async", [False, True], ids=["invoke", "ainvoke"])
def test_the_tool_answers_unavailable_when_the_runs_ids_cannot_be_worked_out(
    memory: EpisodicMemory,
    seeded: str,
    how: str,
    run_async: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    refunds.clear()
    run, reason = _UNWORKABLE[how]
    model = EchoChatModel(answer=_answer)
    agent = create_agent(
        model,
        tools=[refund, create_memory_search_tool(memory, agent_id=AGENT)],
        context_schema=EpisodicContext,
    )
    request: Any = {"messages": [HumanMessage("Refund order 7, like last time.")]}
    with caplog.at_level(logging.WARNING, logger="langchain_episodex"):
        if run_async:
            out = asyncio.run(agent.ainvoke(request, **run))
        else:
            out = agent.invoke(request, **run)

    # The run reached its answer; the refund beside the search ran once, and was not lost.
    assert out["messages"][-1].text == ANSWER
    assert refunds == ["7"]
    search = next(m for m in model.received[1] if getattr(m, "tool_call_id", "") == "call-search")
    assert str(search.content) == "Memory is unavailable just now; answer without it."
    # Nothing of another user's, and no id, reaches the model.
    shown = "\n".join(str(m.content) for m in model.received[1])
    assert "4242" not in shown and seeded not in shown and "t" * 600 not in shown
    # The developer is told why, in the log.
    assert any(reason in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]
