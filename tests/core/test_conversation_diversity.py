"""`conversation_diversity`: the previous-conversations list favours conversations not yet shown.

The engine's fused list is re-ordered greedily: the next item is the one whose fused score,
times `1 - d` for each item of its conversation already placed, is highest (the earlier one in
fused order on a tie), and that product is the `score` it is returned with. Only the order
changes, never which episodes come back; the same-conversation list is left as fused.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import engine_options
from episodex import ConfigurationError, EpisodicMemory, ValidationError, validate_recall_options
from episodex.testing import HashEmbedder

U, A = "u", "a"
QUERY = "garden tomatoes watering schedule"
#: Conversation A says the query's words most often, so it fills the top of the fused list.
CORPUS: list[tuple[str, str, str]] = [
    ("A", "garden tomatoes watering schedule", "We set a garden tomatoes watering schedule"),
    ("A", "garden tomatoes watering", "Garden tomatoes watering, once more"),
    ("A", "garden tomatoes", "The garden tomatoes came up"),
    ("A", "tomatoes", "Tomatoes everywhere this year"),
    ("B", "garden watering schedule plan", "A plan for the watering schedule"),
    ("B", "watering schedule", "The schedule changed"),
    ("C", "garden schedule", "Garden work on a schedule"),
]
#: The streams' weights: no two episodes tie on this corpus, so the fused order is the
#: engine's score order on every backend.
WEIGHTS: dict[str, Any] = {
    "short_weight": 0.3,
    "long_weight": 0.2,
    "bm25_weight": 0.1,
    "speaker_weight": 0,
    "speaker_bm25_weight": 0,
}


async def open_memory(where: str, tmp_path: Path) -> EpisodicMemory:
    path, options = engine_options(where, tmp_path)
    return EpisodicMemory(path, **options, embedder=HashEmbedder(), splade=False)


@pytest.fixture(params=["edge", "memory"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    mem = await open_memory(request.param, tmp_path)
    await mem.memorize_many(
        [
            {
                "user_id": U,
                "agent_id": A,
                "conversation_id": conversation,
                "short_summary": short,
                "long_summary": long,
            }
            for conversation, short, long in CORPUS
        ]
    )
    yield mem
    await mem.aclose()


async def recall(
    mem: EpisodicMemory, diversity: float | None, **options: Any
) -> dict[str, list[dict[str, Any]]]:
    if diversity is not None:
        options["conversation_diversity"] = diversity
    return await mem.recall(user_id=U, agent_id=A, query=QUERY, **{**WEIGHTS, **options})


async def previous(mem: EpisodicMemory, diversity: float | None, **options: Any) -> list[Any]:
    return (await recall(mem, diversity, **options))["previous_conversations"]


def greedy(fused: list[dict[str, Any]], diversity: float) -> list[tuple[str, float]]:
    """`(point_id, score)` of `fused` (best first) re-ordered as the docs say, written out."""
    left = [(i["point_id"], i["conversation_id"], i["score"]) for i in fused]
    placed: dict[str, int] = {}
    out: list[tuple[str, float]] = []
    while left:
        discounted = [s * (1 - diversity) ** placed.get(c, 0) for _, c, s in left]
        best = discounted.index(max(discounted))  # the first of equals: fused order holds
        point_id, conversation, _ = left.pop(best)
        out.append((point_id, discounted[best]))
        placed[conversation] = placed.get(conversation, 0) + 1
    return out


def check_greedy(items: list[dict[str, Any]], fused: dict[str, float], diversity: float) -> None:
    """`items` is a greedy order of the fused scores `fused`, whatever order ties came in."""
    placed: dict[str, int] = {}
    for n, item in enumerate(items):
        keep = (1 - diversity) ** placed.get(item["conversation_id"], 0)
        assert item["score"] == pytest.approx(fused[item["point_id"]] * keep, rel=1e-9)
        for later in items[n + 1 :]:
            theirs = fused[later["point_id"]] * (1 - diversity) ** placed.get(
                later["conversation_id"], 0
            )
            assert theirs <= item["score"] * (1 + 1e-9), (item, later)
        placed[item["conversation_id"]] = placed.get(item["conversation_id"], 0) + 1


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [i["point_id"] for i in items]


async def test_order_and_scores_follow_the_greedy_rule(memory: EpisodicMemory) -> None:
    fused = await previous(memory, 0)
    scores = [i["score"] for i in fused]
    assert len(fused) == len(CORPUS) and len(set(scores)) == len(scores)
    assert scores == sorted(scores, reverse=True)
    for diversity in (0.03, 0.2, 0.5, 0.9, 0.999):
        got = await previous(memory, diversity)
        expected = greedy(fused, diversity)
        assert ids(got) == [point_id for point_id, _ in expected], diversity
        assert [i["score"] for i in got] == pytest.approx([s for _, s in expected], rel=1e-9)
        assert [i["score"] for i in got] == sorted((i["score"] for i in got), reverse=True)
        check_greedy(got, {i["point_id"]: i["score"] for i in fused}, diversity)
        # The streams each item came with are the fused search's, diversity or not.
        by_id = {i["point_id"]: i["streams"] for i in fused}
        assert all(i["streams"] == by_id[i["point_id"]] for i in got)
    # The rule does something here: conversation A leads the fused list twice, and with
    # d = 0.5 another conversation takes the second place.
    assert [i["conversation_id"] for i in fused][:2] == ["A", "A"]
    top = [i["conversation_id"] for i in await previous(memory, 0.5)][:2]
    assert top[0] == "A" and top[1] != "A"


@pytest.mark.parametrize("limit", range(1, len(CORPUS) + 1))
async def test_only_the_order_changes_never_which_episodes(
    memory: EpisodicMemory, limit: int
) -> None:
    fused = await previous(memory, 0, previous_conversation_limit=limit)
    assert len(fused) == limit
    for diversity in (0.03, 0.5, 0.99):
        got = await previous(memory, diversity, previous_conversation_limit=limit)
        assert sorted(ids(got)) == sorted(ids(fused)), (limit, diversity)
        check_greedy(got, {i["point_id"]: i["score"] for i in fused}, diversity)


async def test_the_default_is_0_03(memory: EpisodicMemory) -> None:
    default = await previous(memory, None)
    explicit = await previous(memory, 0.03)
    fused = await previous(memory, 0)
    assert ids(default) == ids(explicit)
    assert [i["score"] for i in default] == [i["score"] for i in explicit]
    # Conversation A's later episodes are discounted: the scores differ from the fused ones.
    assert [i["score"] for i in default] != [i["score"] for i in fused]


async def test_without_stream_ranks_the_order_and_scores_are_the_same(
    memory: EpisodicMemory,
) -> None:
    for diversity in (None, 0, 0.4):
        ranked = await previous(memory, diversity)
        plain = await previous(memory, diversity, with_stream_ranks=False)
        assert ids(plain) == ids(ranked), diversity
        assert [i["score"] for i in plain] == pytest.approx([i["score"] for i in ranked], rel=1e-6)


async def test_the_same_conversation_list_is_left_as_fused(memory: EpisodicMemory) -> None:
    fused = await recall(memory, 0, conversation_id="A", same_conversation_limit=10)
    assert len(fused["same_conversation"]) == 4
    for diversity in (0.03, 0.5, 0.99):
        got = await recall(memory, diversity, conversation_id="A", same_conversation_limit=10)
        assert got["same_conversation"] == fused["same_conversation"], diversity
        # The previous conversations (B twice, C once) are still re-ordered.
        check_greedy(
            got["previous_conversations"],
            {i["point_id"]: i["score"] for i in fused["previous_conversations"]},
            diversity,
        )
    assert {i["conversation_id"] for i in got["previous_conversations"]} == {"B", "C"}


async def test_one_conversation_only_keeps_the_fused_order(memory: EpisodicMemory) -> None:
    # No other conversation to favour: the order stays, each later score discounted once more.
    fused = await previous(memory, 0, conversation_id="B")
    only_a = [i for i in fused if i["conversation_id"] == "A"]
    got = [
        i for i in await previous(memory, 0.5, conversation_id="B") if i["conversation_id"] == "A"
    ]
    assert ids(got) == ids(only_a)


# -- ties -----------------------------------------------------------------------------------

#: With `stage1_limit=1` each stream finds one episode, each a different one, and the three
#: streams weigh the same: three episodes with exactly the same fused score.
TIED: list[dict[str, Any]] = [
    {"conversation_id": "A", "short_summary": "alpha zed", "long_summary": "nothing here"},
    {
        "conversation_id": "A",
        "short_summary": "quiet",
        "long_summary": "alpha zed",
        "speakers": ["Zed"],
    },
    {
        "conversation_id": "B",
        "short_summary": "zed zed zed zed alpha alpha alpha",
        "long_summary": "bbb",
        "speakers": ["Zed"],
    },
]
TIE_OPTIONS: dict[str, Any] = {
    "stage1_limit": 1,
    "short_weight": 0.1,
    "long_weight": 0,
    "bm25_weight": 0,
    "speaker_weight": 0.1,
    "speaker_bm25_weight": 0.1,
}


@pytest.mark.parametrize("where", ["edge", "memory"])
async def test_ties_keep_the_fused_order(where: str, tmp_path: Path) -> None:
    mem = await open_memory(where, tmp_path)
    try:
        await mem.memorize_many([{"user_id": U, "agent_id": A, **ep} for ep in TIED])

        async def ask(diversity: float) -> list[dict[str, Any]]:
            res = await mem.recall(
                user_id=U,
                agent_id=A,
                query="alpha zed",
                conversation_diversity=diversity,
                **TIE_OPTIONS,
            )
            return res["previous_conversations"]

        fused = await ask(0)
        assert len(fused) == 3 and len({i["score"] for i in fused}) == 1  # a three-way tie
        score = fused[0]["score"]
        got = await ask(0.5)
        # Whatever order the engine put the tie in, a conversation's second episode comes
        # after the other conversation's, discounted once.
        assert [i["score"] for i in got] == pytest.approx([score, score, score * 0.5], rel=1e-9)
        assert got[0]["conversation_id"] != got[1]["conversation_id"]
        assert got[2]["conversation_id"] == "A"
        check_greedy(got, {i["point_id"]: score for i in fused}, 0.5)
        if where == "memory":
            # qdrant-client's local mode returns a tie in one fixed order: it is kept.
            again = await ask(0)
            assert ids(again) == ids(fused)
            assert ids(got) == [point_id for point_id, _ in greedy(fused, 0.5)]
            assert got[0]["point_id"] == fused[0]["point_id"]
    finally:
        await mem.aclose()


# -- refusals -------------------------------------------------------------------------------

BAD: list[object] = [-0.1, -1, 1, 1.0, 1.5, math.nan, math.inf, -math.inf, True, False, "0.1", None]


async def test_a_bad_diversity_is_refused_and_nothing_changes(memory: EpisodicMemory) -> None:
    before = await memory.count(user_id=U, agent_id=A)
    fused = await previous(memory, 0)
    for bad in BAD:
        with pytest.raises(ValidationError, match="conversation_diversity"):
            await previous(memory, None, conversation_diversity=bad)
        # Refused even when there is no list to order.
        with pytest.raises(ValidationError, match="conversation_diversity"):
            await previous(memory, None, conversation_diversity=bad, previous_conversation_limit=0)
        with pytest.raises(ConfigurationError, match="conversation_diversity"):
            validate_recall_options({"conversation_diversity": bad}, owner="Retriever")
    assert await memory.count(user_id=U, agent_id=A) == before
    assert ids(await previous(memory, 0)) == ids(fused)


@pytest.mark.parametrize("good", [0, 0.0, 0.03, 0.5, 0.999999])
async def test_every_share_below_1_is_taken(memory: EpisodicMemory, good: float) -> None:
    assert validate_recall_options({"conversation_diversity": good}) == {
        "conversation_diversity": good
    }
    assert len(await previous(memory, good)) == len(CORPUS)


async def test_one_item_or_none_is_returned_as_is(memory: EpisodicMemory) -> None:
    [one] = await previous(memory, 0.9, previous_conversation_limit=1)
    [fused] = await previous(memory, 0, previous_conversation_limit=1)
    assert one["point_id"] == fused["point_id"] and one["score"] == fused["score"]
    assert await previous(memory, 0.9, previous_conversation_limit=0) == []
