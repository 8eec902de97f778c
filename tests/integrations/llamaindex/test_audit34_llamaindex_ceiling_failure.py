"""A failed score ceiling costs `EpisodicRetriever(relative_scores=True)` its scale, not its nodes.

Before, when `EpisodicMemory.score_ceiling` failed (a SPLADE or custom encoder's error) after
the recall itself had worked, the retriever logged "episodic recall failed" and returned no
nodes: the agent went on without the episodes it had found.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from episodex import EmbeddingError, EpisodicMemory
from llama_index.memory.episodex import EpisodicRetriever

AGENT = "support"


def _fail(*_: Any, **__: Any) -> float:
    raise EmbeddingError("the SPLADE model failed")


async def _seed(memory: EpisodicMemory, user: str) -> None:
    await memory.memorize(
        short_summary="Refund for broken kettle order 1182",
        long_summary="The kettle from order 1182 arrived broken; a refund was issued.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="c1",
    )


async def test_a_failed_ceiling_keeps_the_nodes_with_their_fused_scores(
    memory: EpisodicMemory,
    user: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await _seed(memory, user)
    query = "refund for my broken kettle"
    fused = await EpisodicRetriever(memory, user_id=user, agent_id=AGENT).aretrieve(query)
    assert fused

    async def fail(*args: Any, **kwargs: Any) -> float:
        return _fail(*args, **kwargs)

    monkeypatch.setattr(memory, "score_ceiling", fail)
    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT, relative_scores=True)
    with caplog.at_level(logging.WARNING, logger="llama_index.memory.episodex"):
        nodes = await retriever.aretrieve(query)
        again = retriever.retrieve(query)
    for got in (nodes, again):
        assert [n.node.node_id for n in got] == [n.node.node_id for n in fused]
        assert [n.score for n in got] == pytest.approx([n.score for n in fused])
        assert all("score_ceiling" not in n.node.metadata for n in got)
    logged = [r.getMessage() for r in caplog.records]
    assert sum("score ceiling" in m for m in logged) == 2
    assert not any("recall failed" in m for m in logged)


async def test_a_failed_ceiling_raises_with_raise_on_failure(
    memory: EpisodicMemory, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _seed(memory, user)

    async def fail(*args: Any, **kwargs: Any) -> float:
        return _fail(*args, **kwargs)

    monkeypatch.setattr(memory, "score_ceiling", fail)
    loud = EpisodicRetriever(
        memory, user_id=user, agent_id=AGENT, relative_scores=True, raise_on_failure=True
    )
    with pytest.raises(EmbeddingError):
        await loud.aretrieve("kettle refund")
