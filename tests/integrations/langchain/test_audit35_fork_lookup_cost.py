"""Looking for a branch a fork left reads the conversation from the run's position on only.

Every recorded run of a LangGraph thread looks for the episodes of a branch a fork (time
travel) left: by its run, and again once written when the write was deferred or waited. Since
that look-up reaches the whole conversation (not only its newest 64 episodes), it read every
episode of a long conversation after every run; the store now leaves out those before the
run's position, so a run with no branch left reads little more than itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import ConversationEpisode, EpisodicMemory
from episodex.testing import HashEmbedder
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel

_EARLIER = 100


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    return AIMessage(f"About {question}: answer {uuid.uuid4().hex[:8]}.")


@pytest.mark.parametrize("deferred", [False, True], ids=["direct", "deferred"])
def test_a_run_of_a_long_conversation_reads_only_its_own_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, deferred: bool
) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        _long_conversation(memory, monkeypatch, deferred=deferred)
    finally:
        memory.close()


def _long_conversation(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, *, deferred: bool
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    conversation = f"c-{user}"
    # A long conversation (another writer's episodes of it, at its first position).
    memory.store.memorize_many(
        [
            ConversationEpisode.parse(
                {
                    "short_summary": f"note {n}",
                    "long_summary": f"note {n} of an earlier day",
                    "user_id": user,
                    "agent_id": "support",
                    "conversation_id": conversation,
                    "metadata": {"thread_id": user, "thread_root": "an-earlier-line"},
                }
            )
            for n in range(_EARLIER)
        ]
    )
    read: list[int] = []
    iter_episodes = memory.store.iter_episodes

    def counted(**options: Any) -> Iterator[Any]:
        for hit in iter_episodes(**options):
            read.append(1)
            yield hit

    monkeypatch.setattr(memory.store, "iter_episodes", counted)
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", deferred=deferred)
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    context = {"user_id": user, "conversation_id": conversation}
    agent.invoke({"messages": [HumanMessage("Where is my refund?")]}, config, context=context)
    assert middleware.flush() == 0
    read.clear()
    for question in ("And the invoice?", "And the receipt?"):
        agent.invoke({"messages": [HumanMessage(question)]}, config, context=context)
    assert middleware.flush() == 0
    # Each later run reads its own episode (by its run, and by a deferred write), never the
    # conversation's earlier ones.
    assert 0 < len(read) <= 2 * 2
    assert memory.store.count(user_id=user, agent_id="support") == _EARLIER + 3
