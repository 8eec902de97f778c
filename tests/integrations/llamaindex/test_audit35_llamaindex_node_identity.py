"""One episode is one node for LlamaIndex, whichever query or retriever recalled it.

LlamaIndex's `QueryFusionRetriever` (several phrasings of a question, or several retrievers)
tells nodes apart by `node.hash`, which is the text and every metadata value. An
`EpisodicRetriever` node's metadata also held what its query gave it (`score`, `streams`,
`score_ceiling`, `section`), so the same episode recalled twice had two hashes: the fusion
counted it as two nodes, never summed its ranks, and the copy it kept after dropping the other
by id ranked as if one list alone had found it. An episode both lists found first scored
1/60 instead of 2/60, below episodes only one list found. The hash of an episode node now
leaves out what the query gave it; the metadata itself is unchanged.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import TextNode
from llama_index.memory.episodex import EpisodicRetriever

AGENT = "support"


async def _seed(memory: EpisodicMemory, user: str) -> list[str]:
    rows = [
        ("Refund issued for the broken blender", "The blender arrived broken; 59 EUR refunded."),
        ("Shipping address changed", "The new shipping address is 12 Elm Street."),
        ("Password reset", "The agent sent a password reset link."),
    ]
    return await memory.memorize_many(
        [
            {
                "short_summary": short,
                "long_summary": long,
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": f"c{i}",
            }
            for i, (short, long) in enumerate(rows)
        ]
    )


async def test_an_episode_keeps_its_hash_across_queries_and_retrievers(
    memory: EpisodicMemory, user: str
) -> None:
    ids = await _seed(memory, user)
    plain = EpisodicRetriever(memory, user_id=user, agent_id=AGENT)
    other = EpisodicRetriever(
        memory, user_id=user, agent_id=AGENT, conversation_id="c0", relative_scores=True
    )
    first = {n.node.node_id: n for n in await plain.aretrieve("refund for the blender")}
    second = {n.node.node_id: n for n in plain.retrieve("my broken blender, money back?")}
    third = {n.node.node_id: n for n in await other.aretrieve("blender")}
    refund = ids[0]
    # The queries gave the episode different scores and ranks...
    assert first[refund].node.metadata["streams"] != second[refund].node.metadata["streams"]
    assert third[refund].node.metadata["section"] == "same_conversation"
    # ...but it is one node, as LlamaIndex counts nodes, with its metadata as documented.
    assert first[refund].node.hash == second[refund].node.hash == third[refund].node.hash
    assert isinstance(first[refund].node, TextNode)
    assert {"score", "streams", "section"} <= set(first[refund].node.metadata)
    # Different episodes still hash apart.
    assert len({n.node.hash for n in first.values()}) == len(first)


@pytest.mark.parametrize("mode", [FUSION_MODES.RECIPROCAL_RANK, FUSION_MODES.RELATIVE_SCORE])
async def test_query_fusion_sums_an_episode_both_retrievers_found(
    memory: EpisodicMemory, user: str, mode: FUSION_MODES
) -> None:
    ids = await _seed(memory, user)
    # Hybrid by fusion: one retriever on the dense streams, one on the word streams.
    dense = EpisodicRetriever(
        memory,
        user_id=user,
        agent_id=AGENT,
        recall_options={"bm25_weight": 0.0, "splade_weight": 0.0, "splade_short_weight": 0.0},
    )
    words = EpisodicRetriever(
        memory,
        user_id=user,
        agent_id=AGENT,
        recall_options={"short_weight": 0.0, "long_weight": 0.0},
    )
    query = "refund for the broken blender"
    found_by_both = {n.node.node_id for n in await dense.aretrieve(query)} & {
        n.node.node_id for n in await words.aretrieve(query)
    }
    assert ids[0] in found_by_both
    fusion = QueryFusionRetriever(
        [dense, words], llm=MockLLM(), num_queries=1, mode=mode, similarity_top_k=10
    )

    for nodes in (await fusion.aretrieve(query), fusion.retrieve(query)):
        assert nodes[0].node.node_id == ids[0]
        if mode is FUSION_MODES.RECIPROCAL_RANK:
            # First in both lists: 1/60 + 1/60, not one list's 1/60.
            assert nodes[0].score == pytest.approx(2 / 60)
        else:
            # Top of both min-max-scaled lists, halved per retriever weight: 0.5 + 0.5.
            assert nodes[0].score == pytest.approx(1.0)
        assert len({n.node.node_id for n in nodes}) == len(nodes)
