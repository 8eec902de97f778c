"""`EpisodicRetriever` takes what langchain-qdrant users type; its documents carry no noise."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory
from langchain_episodex import EpisodicRetriever

AGENT = "support"


@pytest.fixture(scope="module")
def user(memory: EpisodicMemory) -> str:
    user = f"kw-{uuid.uuid4().hex}"
    asyncio.run(
        memory.memorize_many(
            {
                "short_summary": short,
                "long_summary": f"Details: {short}.",
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": f"c{i}",
            }
            for i, short in enumerate(
                [
                    "Refund for order 1234",
                    "Refund delayed for order 88",
                    "Partial refund on a broken mug",
                    "Shipping address change",
                ]
            )
        )
    )
    return user


def test_search_kwargs_k_and_score_threshold(memory: EpisodicMemory, user: str) -> None:
    everything = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT, k=10)
    ranked = everything.invoke("refund order")
    assert len(ranked) == 4
    scores = [float(d.metadata["score"]) for d in ranked]
    assert scores == sorted(scores, reverse=True)

    two = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT, search_kwargs={"k": 2})
    assert [d.id for d in two.invoke("refund order")] == [d.id for d in ranked[:2]]
    assert len(two.invoke("refund order", k=3)) == 3  # a call's k wins

    cut = scores[1]
    for retriever in (
        EpisodicRetriever(
            memory=memory,
            user_id=user,
            agent_id=AGENT,
            k=10,
            search_type="similarity_score_threshold",
            search_kwargs={"score_threshold": cut},
        ),
        EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT, k=10, score_threshold=cut),
    ):
        kept = retriever.invoke("refund order")
        assert [d.id for d in kept] == [d.id for d in ranked if d.metadata["score"] >= cut]
        assert len(kept) >= 2 and len(kept) < 4
    # Recall options in search_kwargs too, as langchain-qdrant users put filters there.
    plain = EpisodicRetriever(
        memory=memory, user_id=user, agent_id=AGENT, search_kwargs={"with_stream_ranks": False}
    )
    assert all("streams" not in d.metadata for d in plain.invoke("refund"))


def test_empty_query_returns_nothing(memory: EpisodicMemory, user: str) -> None:
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT)
    assert retriever.invoke("") == []
    assert asyncio.run(retriever.ainvoke("   ")) == []


def test_search_types_that_make_no_sense_are_typed_errors(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match="search_type must be one of similarity"):
        mmr: Any = "mmr"  # what a langchain-qdrant user may type
        EpisodicRetriever(memory=memory, user_id="u", agent_id=AGENT, search_type=mmr)
    with pytest.raises(ConfigurationError, match="needs score_threshold"):
        EpisodicRetriever(
            memory=memory, user_id="u", agent_id=AGENT, search_type="similarity_score_threshold"
        )
    with pytest.raises(ConfigurationError, match="unknown search_kwargs fetch_k"):
        EpisodicRetriever(memory=memory, user_id="u", agent_id=AGENT, search_kwargs={"fetch_k": 9})
    with pytest.raises(ConfigurationError, match="search_kwargs k must be"):
        EpisodicRetriever(memory=memory, user_id="u", agent_id=AGENT, search_kwargs={"k": 0})
    with pytest.raises(ConfigurationError, match="score_threshold must be a number"):
        EpisodicRetriever(
            memory=memory, user_id="u", agent_id=AGENT, search_kwargs={"score_threshold": "hi"}
        )


def test_documents_carry_no_noise(memory: EpisodicMemory, user: str) -> None:
    docs = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT, k=10).invoke("refund")
    assert docs
    for doc in docs:
        assert doc.page_content in {
            "Refund for order 1234",
            "Refund delayed for order 88",
            "Partial refund on a broken mug",
            "Shipping address change",
        }
        assert "flows_activated" not in doc.metadata  # stored as [] for these episodes
        assert "tools_invoked" not in doc.metadata
        assert all(value not in (None, [], "", {}) for value in doc.metadata.values())
        assert doc.metadata["section"] == "previous_conversations"
        assert doc.metadata["long_summary"] == f"Details: {doc.page_content}."
