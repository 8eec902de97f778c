"""A LangGraph fork forgets every stored episode of the branch it left, however old.

The middleware looked for the left branch's episodes only among the conversation's newest 64
episodes, when the fork's run was stored by its own call and when it was stored later (the
store had failed, or the write was deferred). A branch behind 64 newer episodes of the
conversation (other threads recording into it, another memory writing to it) stayed stored and
was recalled as if it had happened. Every episode of the conversation is now looked at, a page
at a time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import ConversationEpisode, EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel

# More than the 64 newest episodes the middleware used to look at.
_NEWER = 70


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    return AIMessage(f"About {question}: answer {uuid.uuid4().hex[:8]}.")


def _questions(memory: EpisodicMemory, user: str, thread: str) -> list[str]:
    items = memory.store.read_recent(500, user_id=user, agent_id="support")
    return [
        e["long_summary_text"].split("\n")[0]
        for e in sorted(items, key=lambda e: (e["start_index"], e["long_summary_text"]))
        if e.get("metadata", {}).get("thread_id") == thread
    ]


def _ask(agent: Any, config: RunnableConfig, context: dict[str, str], *questions: str) -> None:
    for question in questions:
        agent.invoke({"messages": [HumanMessage(question)]}, config, context=context)


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


def _newer_episodes(memory: EpisodicMemory, user: str, conversation: str) -> None:
    """`_NEWER` episodes of the conversation stored after the branch (not of its thread)."""
    memory.store.memorize_many(
        [
            ConversationEpisode.parse(
                {
                    "short_summary": f"note {n}",
                    "long_summary": f"note {n} of another writer",
                    "user_id": user,
                    "agent_id": "support",
                    "conversation_id": conversation,
                    "start_index": 1000 + n,
                }
            )
            for n in range(_NEWER)
        ]
    )


@pytest.mark.parametrize("stored", ["by-its-run", "later-flush", "later-deferred"])
def test_a_left_branch_behind_many_newer_episodes_is_forgotten(
    failing: tuple[FailingEngine, EpisodicMemory], *, stored: str
) -> None:
    engine, memory = failing
    user = f"user-{uuid.uuid4().hex}"
    conversation = f"c-{user}"
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", deferred=stored == "later-deferred"
    )
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    context = {"user_id": user, "conversation_id": conversation}
    _ask(agent, config, context, "Where is my refund?", "And the invoice?", "And the receipt?")
    assert middleware.flush() == 0
    _newer_episodes(memory, user, conversation)
    if stored == "later-flush":
        engine.writes = True  # the fork's run waits; the branch it left stays stored
    _ask(agent, _ended_with(agent, config, 2), context, "Cancel my order instead.")
    engine.writes = False
    assert middleware.flush() == 0
    assert _questions(memory, user, user) == [
        "user: Where is my refund?",
        "user: Cancel my order instead.",
    ]
    # The other writer's episodes of the conversation are kept.
    assert memory.store.count(user_id=user, agent_id="support", conversation_id=conversation) == (
        _NEWER + 2
    )
