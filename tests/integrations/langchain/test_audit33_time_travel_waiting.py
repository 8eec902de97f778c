"""A fork forgets the runs of the branch it left even while they still wait to be written.

A thread forked by LangGraph time travel forgets the stored episodes of the runs it left, but
episodes of those runs still waiting in the recorder (the store was down when they were
recorded, or the background writer had not written them yet; in memory or in the spill file)
were written after that, and the abandoned branch came back to be recalled. The fork now also
takes them out of the recorder: only the episodes of the same thread line from the run's start
on, never the run's own, never another thread's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder
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


def _ask(agent: Any, config: RunnableConfig, user: str, *questions: str) -> None:
    for question in questions:
        agent.invoke({"messages": [HumanMessage(question)]}, config, context={"user_id": user})


def _ended_with(agent: Any, config: RunnableConfig, messages: int) -> RunnableConfig:
    """The config of the checkpoint where the thread's run ended with `messages` messages."""
    return next(
        s.config
        for s in agent.get_state_history(config)
        if not s.next and len(s.values.get("messages", [])) == messages
    )


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[tuple[FailingEngine, EpisodicMemory]]:
    engine = FailingEngine(open_engine(path=str(tmp_path / "store")))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    yield engine, memory
    memory.close()


@pytest.mark.parametrize("deferred", [False, True], ids=["direct", "deferred"])
@pytest.mark.parametrize("spill", [False, True], ids=["in-memory", "spill-file"])
def test_a_fork_drops_the_waiting_episodes_of_the_branch_it_left(
    failing: tuple[FailingEngine, EpisodicMemory], tmp_path: Path, *, deferred: bool, spill: bool
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(
        memory,
        agent_id="support",
        deferred=deferred,
        spill_path=tmp_path / "waiting.jsonl" if spill else None,
    )
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    _ask(agent, config, user, "Where is my refund?")
    assert middleware.flush() == 0
    # The store goes down: the next runs wait in the recorder.
    engine.writes = True
    _ask(agent, config, user, "And the invoice?", "And the receipt?")
    # Back to the end of the first run, with another second question; still down.
    _ask(agent, _ended_with(agent, config, 2), user, "Cancel my order instead.")
    assert middleware.flush() > 0  # this run waits for the store
    engine.writes = False
    assert middleware.flush() == 0
    assert _questions(memory, user) == [
        "user: Where is my refund?",
        "user: Cancel my order instead.",
    ]
    _ask(agent, config, user, "Thanks!")
    assert middleware.flush() == 0
    assert _questions(memory, user) == [
        "user: Where is my refund?",
        "user: Cancel my order instead.",
        "user: Thanks!",
    ]


def test_the_waiting_runs_of_another_thread_of_the_conversation_are_kept(
    failing: tuple[FailingEngine, EpisodicMemory],
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", conversation_id="c1")
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    first: RunnableConfig = {"configurable": {"thread_id": f"{user}-1"}}
    second: RunnableConfig = {"configurable": {"thread_id": f"{user}-2"}}
    engine.writes = True
    _ask(agent, first, user, "Where is my refund?", "And the invoice?")
    _ask(agent, second, user, "Where is my parcel?", "And the label?")
    _ask(agent, _ended_with(agent, first, 2), user, "Cancel my order instead.")
    engine.writes = False
    assert middleware.flush() == 0
    assert _questions(memory, user) == [
        "user: Where is my parcel?",
        "user: Where is my refund?",
        "user: And the label?",
        "user: Cancel my order instead.",
    ]
