"""EpisodicRetriever: episodex recall as LlamaIndex `NodeWithScore` results."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory
from llama_index.core.schema import MetadataMode, NodeWithScore
from llama_index.memory.episodex import EpisodicRetriever

AGENT = "support"


async def seed(memory: EpisodicMemory, user: str) -> dict[str, str]:
    """Four episodes, one of them in the conversation `current`; returns their ids by topic."""
    rows = [
        (
            "refund",
            "Refund for broken order 1234",
            "Order 1234 arrived broken; a 59 EUR refund was issued.",
            "c1",
            ["refund_order"],
        ),
        (
            "address",
            "Shipping address changed",
            "The new shipping address is 12 Elm Street.",
            "c2",
            [],
        ),
        ("password", "Password reset", "The agent sent a password reset link.", "c3", []),
        (
            "today",
            "Refund status asked",
            "Today the user asked again whether the refund for 1234 arrived.",
            "current",
            [],
        ),
    ]
    ids = await memory.memorize_many(
        [
            {
                "short_summary": short,
                "long_summary": long,
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": conversation,
                "tools_invoked": tools,
                "metadata": {"channel": "chat"},
            }
            for _, short, long, conversation, tools in rows
        ]
    )
    return {name: point_id for (name, *_), point_id in zip(rows, ids, strict=True)}


async def test_aretrieve_returns_scored_nodes_best_first(memory: EpisodicMemory, user: str) -> None:
    ids = await seed(memory, user)
    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT)

    nodes = await retriever.aretrieve("refund for my broken order 1234")

    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert len(nodes) == 4
    assert nodes[0].node.node_id == ids["refund"]
    scores = [n.score or 0.0 for n in nodes]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    best = nodes[0].node
    assert best.get_content() == (
        "Refund for broken order 1234\n\nOrder 1234 arrived broken; a 59 EUR refund was issued."
    )
    meta = best.metadata
    assert meta["point_id"] == ids["refund"]
    assert meta["conversation_id"] == "c1"
    assert meta["section"] == "previous_conversations"
    assert meta["tools_invoked"] == ["refund_order"]
    assert meta["user_id"] == user and meta["agent_id"] == AGENT
    assert meta["episode_metadata"] == {"channel": "chat"}
    assert datetime.fromisoformat(meta["timestamp_end"]).tzinfo is not None
    assert set(meta["streams"]) <= {"short", "long", "bm25", "splade", "splade_short"}
    assert meta["streams"]
    json.dumps(meta)  # plain JSON: storable in any LlamaIndex docstore
    # What an LLM sees: the episode and where it came from, not ids and ranks.
    shown = best.get_content(metadata_mode=MetadataMode.LLM)
    assert "conversation_id: c1" in shown and user not in shown and "streams" not in shown


async def test_the_current_conversation_comes_back_as_its_own_section(
    memory: EpisodicMemory, user: str
) -> None:
    ids = await seed(memory, user)
    retriever = EpisodicRetriever(
        memory,
        user_id=user,
        agent_id=AGENT,
        conversation_id="current",
        previous_conversation_limit=2,
    )
    nodes = await retriever.aretrieve("did my refund for order 1234 arrive?")

    sections = {n.node.node_id: n.node.metadata["section"] for n in nodes}
    assert sections[ids["today"]] == "same_conversation"
    assert list(sections.values()).count("previous_conversations") == 2
    assert ids["refund"] in sections


async def test_sync_retrieve_matches_async(memory: EpisodicMemory, user: str) -> None:
    await seed(memory, user)
    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT)
    query = "where do you ship my parcels?"
    sync_nodes = retriever.retrieve(query)
    async_nodes = await retriever.aretrieve(query)
    assert [(n.node.node_id, n.score) for n in sync_nodes] == [
        (n.node.node_id, n.score) for n in async_nodes
    ]
    assert sync_nodes[0].node.metadata["conversation_id"] == "c2"


async def test_retrievers_of_two_users_are_isolated(memory: EpisodicMemory, user: str) -> None:
    await seed(memory, user)
    stranger = EpisodicRetriever(memory, user_id=f"{user}-other", agent_id=AGENT)
    assert await stranger.aretrieve("refund for my broken order 1234") == []
    other_agent = EpisodicRetriever(memory, user_id=user, agent_id="sales")
    assert other_agent.retrieve("refund for my broken order 1234") == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"memory": "./memory"}, "memory must be an episodex.EpisodicMemory"),
        ({"user_id": ""}, "user_id must be a non-empty string"),
        ({"agent_id": None}, "agent_id must be a non-empty string"),
        ({"conversation_id": " "}, "conversation_id must be a non-empty string"),
        ({"recall_options": {"query": "x"}}, "recall_options"),
    ],
)
def test_bad_settings_raise_configuration_error(
    memory: EpisodicMemory, options: dict[str, Any], message: str
) -> None:
    settings: dict[str, Any] = {"memory": memory, "user_id": "u", "agent_id": "a", **options}
    given = settings.pop("memory")
    with pytest.raises(ConfigurationError, match=message):
        EpisodicRetriever(given, **settings)
