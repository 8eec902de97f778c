"""A classic memory sharing the middleware's spill file forgets the branch a waiting fork left.

A LangGraph thread forked while the store could not be written: the fork's run waits in the
spill file, and the branch it left stays stored until the run is. A classic memory given the
same spill file (one file for the service's waiting exchanges) writes every episode waiting
in it, the fork's run too, but without the middleware's forgetting: the abandoned branch
stayed stored and was recalled as if it had happened. Every recorder of the adapter now
forgets the branch a run it writes later left.
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
from langchain_episodex import (
    EpisodicContext,
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
)
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    return AIMessage(f"About {question}: answer {uuid.uuid4().hex[:8]}.")


def _questions(memory: EpisodicMemory, user: str) -> list[str]:
    items = memory.store.read_recent(50, user_id=user, agent_id="support", conversation_id=user)
    return [
        e["long_summary_text"].split("\n")[0]
        for e in sorted(items, key=lambda e: (e["start_index"], e["long_summary_text"]))
    ]


def _ask(agent: Any, config: RunnableConfig, user: str, *questions: str) -> None:
    for question in questions:
        agent.invoke({"messages": [HumanMessage(question)]}, config, context={"user_id": user})


def _ended_with(agent: Any, config: RunnableConfig, messages: int) -> RunnableConfig:
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


def test_a_classic_memory_on_the_spill_file_forgets_the_branch_a_waiting_fork_left(
    failing: tuple[FailingEngine, EpisodicMemory], tmp_path: Path
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    spill = tmp_path / "waiting.jsonl"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", spill_path=spill)
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    _ask(agent, config, user, "Where is my refund?", "And the invoice?", "And the receipt?")
    assert middleware.flush() == 0
    engine.writes = True
    _ask(agent, _ended_with(agent, config, 2), user, "Cancel my order instead.")
    assert middleware.flush() > 0  # the fork's run waits in the spill file
    assert "user: And the invoice?" in _questions(memory, user)
    engine.writes = False
    # The classic memory's next exchange writes what waits in the shared file first.
    classic = EpisodicConversationMemory(
        memory=memory,
        user_id=user,
        agent_id="support",
        conversation_id=f"other-{user}",
        spill_path=spill,
    )
    classic.save_context({"input": "Hello"}, {"output": "Hi!"})
    assert classic.stats().pending == 0
    assert _questions(memory, user) == [
        "user: Where is my refund?",
        "user: Cancel my order instead.",
    ]
