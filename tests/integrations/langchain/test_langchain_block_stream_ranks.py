"""Prompt blocks recall without stream ranks; the retriever and an explicit option keep them.

The middleware, LCEL, classic memory and the memory tool render a `<recalled_episodes>` block,
which never shows which streams found an episode: their retriever run asks for no `streams`
(the traced documents carry none) unless `recall_options` sets `with_stream_ranks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnablePassthrough
from langchain_episodex import EpisodicMemoryMiddleware, EpisodicRetriever, recall_episodes
from lc_fakes import EchoChatModel, seeded_user

AGENT = "ranks"


class Documents(BaseCallbackHandler):
    """Keeps the documents of every retriever run."""

    def __init__(self) -> None:
        self.runs: list[list[Document]] = []

    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.runs.append(list(documents))


def traced(memory: EpisodicMemory, user: str, options: dict[str, Any] | None) -> list[Document]:
    chain = RunnablePassthrough.assign(
        block=recall_episodes(memory, agent_id=AGENT, recall_options=options)
    )
    handler = Documents()
    config: RunnableConfig = {"callbacks": [handler], "configurable": {"user_id": user}}
    out = chain.invoke({"input": "train or plane to Vienna?"}, config=config)
    assert "trains to planes" in out["block"]
    [docs] = handler.runs
    assert [d.page_content for d in docs] == ["The user prefers trains to planes."]
    return docs


def test_lcel_block_recalls_without_ranks(memory: EpisodicMemory) -> None:
    user = seeded_user(memory, AGENT)
    assert "streams" not in traced(memory, user, None)[0].metadata
    # Asked for, the traced documents carry them again.
    [doc] = traced(memory, user, {"with_stream_ranks": True})
    assert doc.metadata["streams"]["bm25"]["rank"] == 1


def test_retriever_keeps_ranks_by_default(memory: EpisodicMemory) -> None:
    user = seeded_user(memory, AGENT)
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT)
    [doc] = retriever.invoke("train or plane?")
    assert doc.metadata["streams"]["bm25"]["rank"] == 1


def test_middleware_block_recalls_without_ranks(memory: EpisodicMemory) -> None:
    user = seeded_user(memory, AGENT)
    for options in (None, {"with_stream_ranks": True}):
        middleware = EpisodicMemoryMiddleware(
            memory, agent_id=AGENT, user_id=user, recall_options=options
        )
        agent = create_agent(
            EchoChatModel(answer=lambda _: AIMessage("Take the train.")), middleware=[middleware]
        )
        handler = Documents()
        request: Any = {"messages": [HumanMessage("How should I travel to Vienna?")]}
        out = agent.invoke(request, config={"callbacks": [handler]})
        assert "trains to planes" in out["recalled_episodes"]
        [docs] = handler.runs
        assert ("streams" in docs[0].metadata) is (options is not None)
