"""A LangGraph fork at the thread's first checkpoint forgets the branch it left too.

A thread forked (time travel) at the checkpoint before its first question has no run state
yet: its first run began another line of runs, so the runs of the branch it left were never
recognised as the thread's and stayed in memory, recalled as if they had happened. The run
now takes the thread's line from the checkpointer's earlier checkpoints of that thread; a
thread id used again on a new checkpointer still begins another line (kept, see
test_audit33_time_travel).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    return AIMessage(f"About {question}: answer {uuid.uuid4().hex[:8]}.")


def _questions(memory: EpisodicMemory, user: str) -> list[str]:
    items = memory.store.read_recent(50, user_id=user, agent_id="support")
    return [
        e["long_summary_text"].split("\n")[0]
        for e in sorted(items, key=lambda e: (e["start_index"], e["long_summary_text"]))
    ]


async def _ask(
    agent: Any, config: RunnableConfig, user: str, *questions: str, asynchronous: bool
) -> None:
    for question in questions:
        given = {"messages": [HumanMessage(question)]}
        if asynchronous:
            await agent.ainvoke(given, config, context={"user_id": user})
        else:
            agent.invoke(given, config, context={"user_id": user})


def _before_first_question(agent: Any, config: RunnableConfig) -> RunnableConfig:
    return next(s.config for s in agent.get_state_history(config) if not s.values.get("messages"))


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_a_fork_before_the_first_question_forgets_the_branch_it_left(
    memory: EpisodicMemory, *, asynchronous: bool
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    await _ask(
        agent, config, user, "Where is my refund?", "And the invoice?", asynchronous=asynchronous
    )
    fork = _before_first_question(agent, config)
    await _ask(agent, fork, user, "Cancel my order instead.", asynchronous=asynchronous)
    await _ask(agent, config, user, "Thanks!", asynchronous=asynchronous)
    assert await middleware.aflush() == 0
    assert _questions(memory, user) == ["user: Cancel my order instead.", "user: Thanks!"]
    found = memory.store.recall(
        user_id=user, agent_id="support", query="refund invoice", previous_conversation_limit=10
    )
    assert not any(
        "refund" in e["long_summary_text"] or "invoice" in e["long_summary_text"]
        for e in found["previous_conversations"]
    )
