"""`score_ceiling` and recall choose the query's streams by one rule.

An episode holding every query word, told in the period and by the speaker the query names, is
ranked first by every stream the recall runs; alone in its store, its fused score is therefore
the ceiling, whatever streams the weights and the query turn on or off. Before, the ceiling
re-implemented the recall's choice of streams and could drift from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodex import BundledMiniLMEmbedder, RecallOptions, SyncEpisodicMemory, ValidationError

WHEN = datetime(2025, 3, 10, tzinfo=UTC)
TOLD = "Maria kettle refund 1182 in March 2025"

OPTIONS: list[RecallOptions] = [
    {},
    {"bm25_weight": 0.0},
    {"speaker_weight": 0.0},
    {"speaker_bm25_weight": 0.0},
    {"speaker_weight": 0.0, "speaker_bm25_weight": 0.0, "dated_weight": 0.0},
    {"short_weight": 0.0, "long_weight": 0.0, "splade_weight": 0.0, "splade_short_weight": 0.0},
    {"splade_weight": 0.0, "rrf_k": 5},
    {"short_weight": 0.0, "long_weight": 0.0, "bm25_weight": 0.0},
]
# Each names Maria: a query's every word run is matched against the speakers, so without her
# the speaker streams run among other speakers' episodes and this one is not first in them.
QUERIES = [TOLD, "Maria kettle refund", "Maria 1182", "Maria: refund in March 2025"]


@pytest.fixture(scope="module", params=[True, False], ids=["splade", "no-splade"])
def store(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    embedder: BundledMiniLMEmbedder,
) -> Iterator[tuple[SyncEpisodicMemory, bool]]:
    path: Path = tmp_path_factory.mktemp("ceiling")
    mem = SyncEpisodicMemory(path, embedder=embedder, splade=request.param)
    mem.memorize(
        short_summary=TOLD,
        long_summary=f"Maria: what about the {TOLD.removeprefix('Maria ')}?",
        user_id="u",
        agent_id="a",
        conversation_id="c",
        speakers=["Maria"],
        timestamp_begin=WHEN,
        timestamp_end=WHEN,
    )
    yield mem, request.param
    mem.close()


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_the_only_episode_scores_the_ceiling(
    store: tuple[SyncEpisodicMemory, bool], query: str, options: RecallOptions
) -> None:
    memory, splade = store
    if not splade:
        options = options.copy()
        options.pop("splade_weight", None)
        options.pop("splade_short_weight", None)
        if not any(options.get(f"{name}_weight", 1) for name in ("short", "long", "bm25")):
            # No stream left: both refuse the options alike.
            with pytest.raises(ValidationError, match="are all 0"):
                memory.recall(user_id="u", agent_id="a", query=query, **options)
            with pytest.raises(ValidationError, match="are all 0"):
                memory.score_ceiling(query, **options)
            return
    (hit,) = memory.recall(user_id="u", agent_id="a", query=query, **options)[
        "previous_conversations"
    ]
    assert hit["score"] == pytest.approx(memory.score_ceiling(query, **options))


def test_a_query_of_stopwords_with_only_bm25_has_no_stream(
    store: tuple[SyncEpisodicMemory, bool],
) -> None:
    memory, splade = store
    only_bm25: RecallOptions = {"short_weight": 0.0, "long_weight": 0.0, "speaker_weight": 0.0}
    if splade:
        only_bm25 |= {"splade_weight": 0.0, "splade_short_weight": 0.0}
    found = memory.recall(user_id="u", agent_id="a", query="the of and", **only_bm25)
    assert found["previous_conversations"] == []
    assert memory.score_ceiling("the of and", **only_bm25) == 0.0
