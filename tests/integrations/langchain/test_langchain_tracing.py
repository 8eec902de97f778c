"""Recall shows up in tracing as a retriever run: callbacks see the query and the documents."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnablePassthrough
from langchain_episodex import EpisodicMemoryMiddleware, recall_episodes
from lc_fakes import EchoChatModel, seeded_user

AGENT = "tracer"


class RetrieverRuns(BaseCallbackHandler):
    """Keeps every retriever run's name, query, documents and parent run."""

    def __init__(self) -> None:
        self.starts: dict[UUID, tuple[str, str, UUID | None]] = {}
        self.ends: dict[UUID, list[Document]] = {}
        self.chain_runs: set[UUID] = set()

    def on_chain_start(
        self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.chain_runs.add(run_id)

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.starts[run_id] = (str(kwargs.get("name")), query, parent_run_id)

    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.ends[run_id] = list(documents)

    def only_run(self) -> tuple[str, str, UUID | None, list[Document]]:
        assert len(self.starts) == 1 and set(self.ends) == set(self.starts)
        (run_id,) = self.starts
        name, query, parent = self.starts[run_id]
        return name, query, parent, self.ends[run_id]


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    return AIMessage("Take the train.")


def _check(handler: RetrieverRuns, query: str) -> None:
    name, seen_query, parent, docs = handler.only_run()
    assert name == "EpisodicRetriever"
    assert seen_query == query
    # The documents recalled (the sync run's own episode too, for the async run after it).
    assert "The user prefers trains to planes." in [d.page_content for d in docs]
    assert len({d.metadata["user_id"] for d in docs}) == 1
    assert parent in handler.chain_runs  # nested in the run that recalled


def test_middleware_recall_is_a_retriever_run(memory: EpisodicMemory) -> None:
    user = seeded_user(memory, AGENT)
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT, user_id=user)],
    )
    for run in ("sync", "async"):
        handler = RetrieverRuns()
        config: RunnableConfig = {"callbacks": [handler]}
        question = f"How should I travel to Vienna? ({run})"
        request: Any = {"messages": [HumanMessage(question)]}
        if run == "sync":
            out = agent.invoke(request, config=config)
        else:
            out = asyncio.run(agent.ainvoke(request, config=config))
        assert "trains to planes" in out["recalled_episodes"]
        _check(handler, question)


def test_lcel_recall_is_a_retriever_run(memory: EpisodicMemory) -> None:
    user = seeded_user(memory, AGENT)
    chain = RunnablePassthrough.assign(block=recall_episodes(memory, agent_id=AGENT))
    handler = RetrieverRuns()
    config: RunnableConfig = {"callbacks": [handler], "configurable": {"user_id": user}}
    out = chain.invoke({"input": "train or plane to Vienna?"}, config=config)
    assert "trains to planes" in out["block"]
    _check(handler, "train or plane to Vienna?")

    handler = RetrieverRuns()
    config = {"callbacks": [handler], "configurable": {"user_id": user}}
    asyncio.run(chain.ainvoke({"input": "train or plane?"}, config=config))
    _check(handler, "train or plane?")
