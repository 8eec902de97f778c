"""A run whose own question a summary (or a trim) takes out of the history is still recorded.

The middleware found a run's messages at its end by the ids of its first message and the one
before it. In a long run (a tool loop of many model calls) a `SummarizationMiddleware` with
a small `keep`, or a middleware trimming the history before each model call, removes both
before the run ends: the run was then skipped with only a warning, and the user's question
and the answer were never recorded. The run now keeps its input in its run state, and is
recorded from it and the run's messages still in the history, at positions that go on
counting the thread.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain.agents.middleware import AgentState, SummarizationMiddleware, before_model
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_episodex import EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from lc_fakes import RecordingChatModel

STEPS = 4
QUESTIONS = ["Where is my order 1234?", "And where is my order 5678?"]


@tool
def order_status(order_id: str) -> str:
    """Look up an order's status, one warehouse at a time."""
    return f"Order {order_id}: not in this warehouse."


def _answers(run: int) -> list[BaseMessage]:
    """A tool loop of `STEPS` calls, then the answer."""
    order = QUESTIONS[run].split()[-1].rstrip("?")
    calls: list[BaseMessage] = [
        AIMessage(
            "",
            tool_calls=[
                {"name": "order_status", "args": {"order_id": order}, "id": f"call-{run}-{n}"}
            ],
        )
        for n in range(STEPS)
    ]
    return [*calls, AIMessage(f"Order {order} is in the Oslo warehouse.")]


@before_model
def _keep_first_and_last_two(
    state: AgentState[Any], runtime: Runtime[Any]
) -> dict[str, Any] | None:
    # LangChain's trimming recipe: the thread's first message and the latest ones.
    messages = state["messages"]
    if len(messages) <= 3:
        return None
    return {"messages": [RemoveMessage(id=str(m.id)) for m in messages[1:-2]]}


def _agent(memory: EpisodicMemory, user: str, how: str) -> tuple[Any, RecordingChatModel | None]:
    episodes = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
    model = RecordingChatModel(responses=[*_answers(0), *_answers(1)])
    summarizer = None
    if how == "summary":
        summarizer = RecordingChatModel(responses=[AIMessage("The user asked about orders.")])
        shortening: Any = SummarizationMiddleware(
            summarizer, trigger=("messages", 4), keep=("messages", 2)
        )
    else:
        shortening = _keep_first_and_last_two
    agent = create_agent(
        model,
        tools=[order_status],
        middleware=[episodes, shortening],
        checkpointer=InMemorySaver(),
    )
    return agent, summarizer


def _config(user: str) -> RunnableConfig:
    return {"configurable": {"thread_id": f"thread-{user}"}}


def _check(memory: EpisodicMemory, user: str) -> None:
    items = sorted(
        memory.store.read_recent(10, user_id=user, agent_id="support"),
        key=lambda e: e["start_index"],
    )
    texts = [str(e["long_summary_text"]) for e in items]
    assert len(items) == len(QUESTIONS), texts
    for text, question, run in zip(texts, QUESTIONS, range(len(QUESTIONS)), strict=True):
        assert text.startswith(f"user: {question}\n"), text
        assert str(_answers(run)[-1].text) in text, text
        assert "summary of the conversation" not in text
    for item in items:
        assert item["tools_invoked"] == ["order_status"]
        assert item["start_index"] <= item["end_index"]
    # One count of the thread: the second run's episode begins after the first's.
    for first, second in itertools.pairwise(items):
        assert first["end_index"] < second["start_index"], items


def test_a_long_run_summarised_inside_is_recorded(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, summarizer = _agent(memory, user, "summary")
    for question in QUESTIONS:
        agent.invoke({"messages": [HumanMessage(question)]}, _config(user))
    assert summarizer is not None and summarizer.received  # summarised inside the runs
    _check(memory, user)


async def test_a_long_run_summarised_inside_is_recorded_async(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, summarizer = _agent(memory, user, "summary")
    for question in QUESTIONS:
        await agent.ainvoke({"messages": [HumanMessage(question)]}, _config(user))
    assert summarizer is not None and summarizer.received
    _check(memory, user)


def test_a_long_run_trimmed_inside_is_recorded(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, _ = _agent(memory, user, "trim")
    for question in QUESTIONS:
        agent.invoke({"messages": [HumanMessage(question)]}, _config(user))
    # The second run's question was trimmed away before it ended.
    history = agent.get_state(_config(user)).values["messages"]
    assert QUESTIONS[1] not in [m.text for m in history]
    _check(memory, user)


async def test_a_long_run_trimmed_inside_is_recorded_async(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, _ = _agent(memory, user, "trim")
    for question in QUESTIONS:
        await agent.ainvoke({"messages": [HumanMessage(question)]}, _config(user))
    _check(memory, user)


def test_a_stopped_long_run_summarised_inside_is_recorded(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, _ = _agent(memory, user, "summary")
    for update in agent.stream(
        {"messages": [HumanMessage(QUESTIONS[0])]}, _config(user), stream_mode="updates"
    ):
        model_update = update.get("model") or {}
        if any(m.text.startswith("Order") for m in model_update.get("messages", [])):
            break  # the client went away with the answer: the next run records this one
    agent.invoke({"messages": [HumanMessage(QUESTIONS[1])]}, _config(user))
    _check(memory, user)
