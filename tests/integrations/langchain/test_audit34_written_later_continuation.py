"""A run written later never forgets the runs that came after it in the same thread.

Two workers of one service (one store, one checkpointer): a thread's run on the first waits
in its recorder (the store failing), the thread goes on on the second, whose run is stored.
When the first worker's run was written later, `_forget_left_branches` took every stored
episode of the thread from the waiting run's position on for a branch left by a fork, and
forgot the second worker's run: a turn the user had, gone. Only episodes recorded before
the late run (a fork's abandoned branch) are forgotten.
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


@pytest.mark.parametrize("deferred", [False, True], ids=["direct", "deferred"])
def test_a_run_written_later_keeps_the_runs_stored_after_it(
    failing: tuple[FailingEngine, EpisodicMemory], tmp_path: Path, *, deferred: bool
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    saver = InMemorySaver()  # the checkpointer both workers share
    first = EpisodicMemoryMiddleware(
        memory, agent_id="support", deferred=deferred, spill_path=tmp_path / "one.jsonl"
    )
    second = EpisodicMemoryMiddleware(
        memory, agent_id="support", deferred=deferred, spill_path=tmp_path / "two.jsonl"
    )
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    _ask(_agent(first, saver), config, user, "Where is my refund?")
    assert first.flush() == 0
    engine.writes = True
    _ask(_agent(first, saver), config, user, "And the invoice?")
    assert first.flush() > 0  # waits on the first worker
    engine.writes = False
    _ask(_agent(second, saver), config, user, "And the receipt?")
    assert second.flush() == 0
    assert first.flush() == 0  # the waiting run is written later
    assert _questions(memory, user) == [
        "user: Where is my refund?",
        "user: And the invoice?",
        "user: And the receipt?",
    ]
