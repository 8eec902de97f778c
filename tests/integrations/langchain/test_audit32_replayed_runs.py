"""A run LangGraph runs again from an earlier checkpoint is recorded once, as the thread has it.

LangGraph's time travel re-runs a thread from one of its checkpoints: `agent.invoke(None,
config_with_checkpoint_id)` replays the steps after it (a "regenerate"), and an input given
with such a config forks the thread there (an edited question). Either way the run is
recorded again at its end; each recording was a new episode, so the memory kept the answer
the user replaced next to the one the thread now has, both claiming the same messages of the
conversation. A run's episodes are now stored under ids of the run's place in its thread:
the run recorded again replaces its earlier record.

A run that stops at a human-in-the-loop interrupt is not recorded until it is resumed (by
another agent object on the same checkpointer, as another process would), and then once,
with the messages from before and after the interrupt.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from lc_fakes import EchoChatModel, RecordingChatModel


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    # Another answer each time, as a model sampling again would give.
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    return AIMessage(f"About {question}: answer {uuid.uuid4().hex[:8]}.")


def _agent(memory: EpisodicMemory, saver: InMemorySaver) -> tuple[EpisodicMemoryMiddleware, Any]:
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=saver,
    )
    return middleware, agent


def _stored(memory: EpisodicMemory, user: str) -> list[tuple[int, int, str]]:
    items = memory.store.read_recent(20, user_id=user, agent_id="support")
    return sorted((e["start_index"], e["end_index"], e["long_summary_text"]) for e in items)


def _thread(agent: Any, config: RunnableConfig) -> list[tuple[int, int, str]]:
    """The thread's exchanges as the user now sees them, as they would be recorded."""
    messages: list[BaseMessage] = agent.get_state(config).values["messages"]
    return [
        (i, i + 1, f"user: {messages[i].text}\nassistant: {messages[i + 1].text}")
        for i in range(0, len(messages), 2)
    ]


def _two_runs(agent: Any, user: str) -> tuple[RunnableConfig, dict[str, str]]:
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    context = {"user_id": user}
    agent.invoke({"messages": [HumanMessage("Where is my refund?")]}, config, context=context)
    agent.invoke({"messages": [HumanMessage("And the invoice?")]}, config, context=context)
    return config, context


def test_a_run_replayed_from_a_checkpoint_is_recorded_once(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory, InMemorySaver())
    config, context = _two_runs(agent, user)
    # The second run's checkpoint before its model call: replaying it regenerates the answer.
    before_answer = next(
        s
        for s in agent.get_state_history(config)
        if s.next == ("model",) and len(s.values["messages"]) == 3
    )
    agent.invoke(None, before_answer.config, context=context)
    assert middleware.flush() == 0
    assert _stored(memory, user) == _thread(agent, config)


async def test_a_run_replayed_asynchronously_is_recorded_once(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory, InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    context = {"user_id": user}
    await agent.ainvoke(
        {"messages": [HumanMessage("Where is my refund?")]}, config, context=context
    )
    history = [s async for s in agent.aget_state_history(config)]
    before_answer = next(s for s in history if s.next == ("model",))
    await agent.ainvoke(None, before_answer.config, context=context)
    assert await middleware.aflush() == 0
    assert await asyncio.to_thread(_stored, memory, user) == _thread(agent, config)


def test_a_thread_forked_with_an_edited_question_keeps_the_branch_it_has(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory, InMemorySaver())
    config, context = _two_runs(agent, user)
    after_first = next(
        s for s in agent.get_state_history(config) if not s.next and len(s.values["messages"]) == 2
    )
    edited = {"messages": [HumanMessage("And my receipt?")]}
    agent.invoke(edited, after_first.config, context=context)
    agent.invoke({"messages": [HumanMessage("Thanks!")]}, config, context=context)
    assert middleware.flush() == 0
    stored = _stored(memory, user)
    assert stored == _thread(agent, config)
    assert [line.split("\n")[0] for _, _, line in stored] == [
        "user: Where is my refund?",
        "user: And my receipt?",
        "user: Thanks!",
    ]


@tool
def refund(order: str) -> str:
    """Refund an order once a person approves it."""
    decision = interrupt({"approve refund of": order})
    return f"refund of {order}: {decision}"


def _approving_agent(
    memory: EpisodicMemory, saver: InMemorySaver, answers: list[BaseMessage]
) -> tuple[EpisodicMemoryMiddleware, Any]:
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        RecordingChatModel(responses=answers),
        tools=[refund],
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=saver,
    )
    return middleware, agent


def test_a_run_resumed_after_an_interrupt_is_recorded_once_whole(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    saver = InMemorySaver()
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    context = {"user_id": user}
    call = AIMessage("", tool_calls=[{"name": "refund", "args": {"order": "A1"}, "id": "c1"}])
    first, asking = _approving_agent(memory, saver, [call])
    stopped = asking.invoke({"messages": [HumanMessage("Refund A1")]}, config, context=context)
    assert stopped["__interrupt__"]
    assert first.flush() == 0
    assert _stored(memory, user) == []  # waiting for a person is not the run's end
    second, resuming = _approving_agent(memory, saver, [AIMessage("A1 is refunded.")])
    done = resuming.invoke(Command(resume="approved"), config, context=context)
    assert done["messages"][-1].text == "A1 is refunded."
    third, asked_again = _approving_agent(memory, saver, [AIMessage("It is in your inbox.")])
    asked_again.invoke({"messages": [HumanMessage("And the invoice?")]}, config, context=context)
    assert second.flush() == 0
    assert third.flush() == 0
    assert _stored(memory, user) == [
        (
            0,
            3,
            "user: Refund A1\nassistant: [called refund]\ntool: refund of A1: approved\n"
            "assistant: A1 is refunded.",
        ),
        (4, 5, "user: And the invoice?\nassistant: It is in your inbox."),
    ]


def test_runs_without_a_thread_are_each_recorded(memory: EpisodicMemory) -> None:
    # No checkpointer: every run begins at position 0 of the conversation, and the same
    # message object (with the id the first run gave it) may be sent again; each run is one.
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", conversation_id="c1")
    agent = create_agent(
        EchoChatModel(answer=_answer), middleware=[middleware], context_schema=EpisodicContext
    )
    question = HumanMessage("Where is my refund?", id="question-1")
    agent.invoke({"messages": [question]}, context={"user_id": user})
    agent.invoke({"messages": [question]}, context={"user_id": user})
    assert middleware.flush() == 0
    assert len(_stored(memory, user)) == 2


def test_threads_sharing_a_conversation_id_keep_their_runs_apart(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", conversation_id="c1")
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    question = HumanMessage("Where is my refund?", id="question-1")
    for thread in ("t1", "t2"):
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        agent.invoke({"messages": [question]}, config, context={"user_id": user})
    assert middleware.flush() == 0
    assert len(_stored(memory, user)) == 2
