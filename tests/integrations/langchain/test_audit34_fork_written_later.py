"""A fork whose run is written later still forgets the stored episodes of the branch it left.

A LangGraph thread forked (time travel) while the store could not be written: the fork's run
waits in the recorder, and the left branch's stored episodes were kept, so the run is never
lost. But once the waiting run was written (by `flush`, the next write, or the next recorder
on the spill file after a restart), nothing forgot them, and the abandoned branch was recalled
as if it had happened. They are now forgotten right after the fork's run is stored, never
before it, and never a run recorded after the fork.
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


def _agent(middleware: EpisodicMemoryMiddleware, saver: InMemorySaver) -> Any:
    return create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=saver,
    )


@pytest.mark.parametrize("written_by", ["flush", "next-run", "restart"])
@pytest.mark.parametrize("deferred", [False, True], ids=["direct", "deferred"])
def test_a_fork_written_later_forgets_the_branch_it_left(
    failing: tuple[FailingEngine, EpisodicMemory],
    tmp_path: Path,
    *,
    deferred: bool,
    written_by: str,
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    spill = tmp_path / "waiting.jsonl"
    saver = InMemorySaver()
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", deferred=deferred, spill_path=spill
    )
    agent = _agent(middleware, saver)
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    _ask(agent, config, user, "Where is my refund?", "And the invoice?", "And the receipt?")
    assert middleware.flush() == 0
    # The store cannot be written: the fork's run waits, the branch it left stays stored.
    engine.writes = True
    _ask(agent, _ended_with(agent, config, 2), user, "Cancel my order instead.")
    assert middleware.flush() > 0
    assert "user: And the invoice?" in _questions(memory, user)
    engine.writes = False
    if written_by == "flush":
        assert middleware.flush() == 0
    elif written_by == "next-run":
        _ask(agent, config, user, "Thanks!")
        assert middleware.flush() == 0
    else:
        # Another process takes over the spill file (this one was killed).
        middleware = EpisodicMemoryMiddleware(
            memory, agent_id="support", deferred=deferred, spill_path=spill
        )
        assert middleware.flush() == 0
    expected = ["user: Where is my refund?", "user: Cancel my order instead."]
    if written_by == "next-run":
        expected.append("user: Thanks!")
    assert _questions(memory, user) == expected


def test_runs_recorded_after_the_fork_are_kept(
    failing: tuple[FailingEngine, EpisodicMemory],
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = _agent(middleware, InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    _ask(agent, config, user, "Where is my refund?", "And the invoice?", "And the receipt?")
    engine.writes = True
    _ask(agent, _ended_with(agent, config, 2), user, "Cancel my order instead.")
    _ask(agent, config, user, "And the delivery?", "Thanks!")
    engine.writes = False
    assert middleware.flush() == 0
    assert _questions(memory, user) == [
        "user: Where is my refund?",
        "user: Cancel my order instead.",
        "user: And the delivery?",
        "user: Thanks!",
    ]
