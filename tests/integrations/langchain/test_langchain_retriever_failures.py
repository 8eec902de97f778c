"""A retriever whose memory fails returns no documents, so the chain it feeds still answers.

Before, `EpisodicRetriever` raised the engine's error out of `invoke`: a RAG chain built on it
(`{"context": retriever | format, ...} | prompt | model`) failed, and the user got no answer.
The engine here is the real in-RAM qdrant-client one, made to fail by `FailingEngine`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from episodex import (
    EngineUnavailableError,
    EpisodicMemory,
    StoreClosedError,
    ValidationError,
)
from episodex.testing import FailingEngine, HashEmbedder
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_episodex import EpisodicRetriever
from lc_fakes import RecordingChatModel

AGENT = "support"


def _format(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs) or "(nothing remembered)"


async def test_a_rag_chain_answers_when_the_retriever_fails(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    await memory.memorize(
        short_summary="Refund for order 1234 issued",
        long_summary="The refund for order 1234 was issued on Monday.",
        user_id="u1",
        agent_id=AGENT,
        conversation_id="c1",
    )
    retriever = EpisodicRetriever(memory=memory, user_id="u1", agent_id=AGENT, k=3)
    model = RecordingChatModel(responses=[AIMessage("It was issued on Monday.")] * 2)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Memory:\n{context}"), ("human", "{question}")]
    )
    chain = (
        {
            "context": retriever | RunnableLambda(_format),
            "question": RunnablePassthrough(),
        }
        | prompt
        | model
    )

    # Working memory: the episode reaches the prompt.
    assert (await chain.ainvoke("where is my refund?")).text == "It was issued on Monday."
    assert "Refund for order 1234 issued" in model.prompt_text()

    engine.reads = True
    with caplog.at_level(logging.WARNING, logger="langchain_episodex"):
        answer = chain.invoke("where is my refund?")
    assert answer.text == "It was issued on Monday."
    assert "(nothing remembered)" in model.prompt_text()
    assert engine.failures == 1
    assert any("EpisodicRetriever: memory recall failed" in r.getMessage() for r in caplog.records)


async def test_raise_on_failure_raises_and_bad_input_always_raises(
    failing: tuple[EpisodicMemory, FailingEngine],
) -> None:
    memory, engine = failing
    engine.reads = True
    quiet = EpisodicRetriever(memory=memory, user_id="u1", agent_id=AGENT)
    assert await quiet.ainvoke("refund") == []
    loud = EpisodicRetriever(memory=memory, user_id="u1", agent_id=AGENT, raise_on_failure=True)
    with pytest.raises(EngineUnavailableError):
        await loud.ainvoke("refund")
    with pytest.raises(EngineUnavailableError):
        loud.invoke("refund")
    with pytest.raises(ValidationError, match="k must be"):
        await quiet.ainvoke("refund", k=0)


async def test_a_closed_memory_still_raises(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "m", embedder=HashEmbedder(), splade=False)
    retriever = EpisodicRetriever(memory=memory, user_id="u1", agent_id=AGENT)
    memory.close()
    with pytest.raises(StoreClosedError):
        await retriever.ainvoke("refund")
