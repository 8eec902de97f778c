"""`EpisodicRetriever` whose memory fails returns no nodes, so what it feeds still runs.

Before, the engine's error came out of `retrieve` and failed the query engine or agent step
built on it. The engine is the real in-RAM qdrant-client one, made to fail by `FailingEngine`.
"""

from __future__ import annotations

import logging

import pytest
from episodex import EngineUnavailableError, EpisodicMemory
from episodex.testing import FailingEngine
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.memory.episodex import EpisodicRetriever


async def test_a_query_engine_still_answers_when_recall_fails(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    await memory.memorize(
        short_summary="Refund for order 1234 issued",
        long_summary="The refund for order 1234 was issued on Monday.",
        user_id="u1",
        agent_id="support",
        conversation_id="c1",
    )
    retriever = EpisodicRetriever(memory, user_id="u1", agent_id="support")
    found = await retriever.aretrieve("refund")
    assert found and found[0].node.get_content().startswith("Refund for order 1234 issued")
    engine.reads = True
    with caplog.at_level(logging.WARNING, logger="llama_index.memory.episodex"):
        assert await retriever.aretrieve("refund") == []
        assert retriever.retrieve("refund") == []
        answer = await RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).aquery("refund?")
    assert answer.source_nodes == []
    assert engine.failures == 3
    assert sum("episodic recall failed" in r.getMessage() for r in caplog.records) == 3


async def test_raise_on_failure_raises(failing: tuple[EpisodicMemory, FailingEngine]) -> None:
    memory, engine = failing
    engine.reads = True
    loud = EpisodicRetriever(memory, user_id="u1", agent_id="support", raise_on_failure=True)
    with pytest.raises(EngineUnavailableError):
        await loud.aretrieve("refund")
    with pytest.raises(EngineUnavailableError):
        loud.retrieve("refund")
