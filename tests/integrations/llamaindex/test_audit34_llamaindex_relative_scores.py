"""EpisodicRetriever scores a 0-1 similarity cutoff can use (`relative_scores=True`).

The default node score is the fused RRF score, about 0.03 for the best episode, so the common
`SimilarityPostprocessor(similarity_cutoff=0.5)` recipe silently dropped every node.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from episodex import ConfigurationError, EpisodicMemory
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.schema import MetadataMode
from llama_index.memory.episodex import EpisodicRetriever

AGENT = "support"


async def _seed(memory: EpisodicMemory, user: str) -> None:
    await memory.memorize_many(
        [
            {
                "short_summary": "Refund for broken kettle order 1182",
                "long_summary": "The kettle from order 1182 arrived broken; a refund was issued.",
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": "c1",
            },
            {
                "short_summary": "Password reset",
                "long_summary": "The agent sent a password reset link.",
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": "c2",
            },
        ]
    )


async def test_relative_scores_pass_a_similarity_cutoff_and_keep_the_fused_score(
    memory: EpisodicMemory, user: str
) -> None:
    await _seed(memory, user)
    cutoff = SimilarityPostprocessor(similarity_cutoff=0.5)
    query = "refund for my broken kettle order 1182"

    fused = await EpisodicRetriever(memory, user_id=user, agent_id=AGENT).aretrieve(query)
    assert fused and all((n.score or 0) < 0.1 for n in fused)  # why the recipe failed
    assert cutoff.postprocess_nodes(fused) == []  # the default is unchanged

    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT, relative_scores=True)
    nodes = await retriever.aretrieve(query)
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in fused]  # same order
    assert all(0.0 <= (n.score or 0) <= 1.0 for n in nodes)
    kept = cutoff.postprocess_nodes(nodes)
    assert [n.node.metadata["short_summary"] for n in kept] == [
        "Refund for broken kettle order 1182"
    ]
    for raw, scaled in zip(fused, nodes, strict=True):
        meta = scaled.node.metadata
        assert meta["score"] == pytest.approx(raw.score)  # the fused score, kept
        assert meta["streams"]  # and each stream's rank of the episode
        assert scaled.score == pytest.approx(meta["score"] / meta["score_ceiling"])
        shown = scaled.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "score_ceiling" not in shown


@pytest.mark.parametrize(
    "query",
    [
        "Maria kettle refund 1182",  # the base streams and the speaker streams
        "Maria kettle refund 1182 in March 2025",  # and the dated stream
    ],
)
async def test_an_episode_first_in_every_stream_scores_one(
    memory: EpisodicMemory, user: str, query: str
) -> None:
    # One episode, holding every query word, told in March 2025 and spoken by Maria: every
    # stream the recall runs ranks it first, so its fused score is the ceiling the store
    # computes without searching.
    when = datetime(2025, 3, 10, tzinfo=UTC)
    await memory.memorize(
        short_summary="Maria kettle refund 1182 in March 2025",
        long_summary="Maria: what about the kettle refund for 1182 in March 2025?",
        user_id=user,
        agent_id=AGENT,
        conversation_id="c1",
        speakers=["Maria"],
        timestamp_begin=when,
        timestamp_end=when,
    )
    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT, relative_scores=True)
    (node,) = await retriever.aretrieve(query)
    assert node.score == pytest.approx(1.0)
    assert node.node.metadata["score"] == pytest.approx(node.node.metadata["score_ceiling"])
    assert set(node.node.metadata["streams"]) >= {"speaker", "speaker_bm25"}
    if "2025" in query:
        assert "dated" in node.node.metadata["streams"]


def test_relative_scores_must_be_a_bool(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match="relative_scores"):
        EpisodicRetriever(memory, user_id="u", agent_id=AGENT, relative_scores="yes")  # type: ignore[arg-type]
