"""The `speaker` and `speaker_bm25` streams: a query naming a speaker searches their episodes.

`ConversationEpisode.speakers` is stored as given and, case-folded (each whole name, and each
word of a longer name that is not an article, preposition or title), in an indexed field the
speaker streams filter on. A recall whose query names one of an episode's speakers runs the long dense search (`speaker`) and the BM25 search (`speaker_bm25`) again
among those episodes, always within the same user and agent, and reports them in `streams`.
The indexed field is derived, so no item, read or export ever shows it.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import engine_options
from episodex import (
    ConfigurationError,
    ConversationEpisode,
    EpisodicMemory,
    ValidationError,
    validate_recall_options,
)
from episodex.testing import HashEmbedder

U, A = "u", "a"
SPEAKER_STREAMS = ("speaker", "speaker_bm25")
#: Every episode of the user and agent under test: conversation id -> (speakers, long summary).
OWN: dict[str, tuple[list[str], str]] = {
    "hike": (["Caroline", "Melanie"], "Caroline and Melanie talked about hiking in the hills"),
    "pottery": (["Melanie"], "Melanie took a pottery class on Sunday"),
    "games": (["Mary Ann"], "We played board games all evening"),
    "quiet": ([], "Someone mentioned hiking in the hills with Caroline"),
}
#: Other tenants' episodes name Caroline too, with the very words of the queries below.
FOREIGN: list[dict[str, Any]] = [
    {"user_id": "other", "agent_id": A, "conversation_id": "theirs"},
    {"user_id": U, "agent_id": "other-agent", "conversation_id": "other-agents"},
]


def episode(conversation: str, speakers: list[str], long: str, **owner: str) -> dict[str, Any]:
    return {
        "user_id": U,
        "agent_id": A,
        "conversation_id": conversation,
        "short_summary": long.split(" about ")[-1],
        "long_summary": long,
        "speakers": speakers,
        **owner,
    }


CORPUS = [episode(c, speakers, long) for c, (speakers, long) in OWN.items()] + [
    episode(
        "x", ["Caroline", "Mary Ann"], "Caroline said hiking in the hills with Ann was fun", **owner
    )
    for owner in FOREIGN
]


async def open_memory(where: str, tmp_path: Path) -> EpisodicMemory:
    path, options = engine_options(where, tmp_path)
    return EpisodicMemory(path, **options, embedder=HashEmbedder(), splade=False)


@pytest.fixture(params=["edge", "memory"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    mem = await open_memory(request.param, tmp_path)
    await mem.memorize_many(CORPUS)
    yield mem
    await mem.aclose()


async def previous(mem: EpisodicMemory, query: str, **options: Any) -> list[dict[str, Any]]:
    res = await mem.recall(user_id=U, agent_id=A, query=query, **options)
    return res["previous_conversations"]


def with_stream(items: list[dict[str, Any]], stream: str) -> set[str]:
    """The conversations of the items `stream` found."""
    return {i["conversation_id"] for i in items if stream in i["streams"]}


async def test_a_named_speaker_adds_both_streams_over_their_episodes_only(
    memory: EpisodicMemory,
) -> None:
    items = await previous(memory, "What did Caroline say about hiking?")
    assert {i["conversation_id"] for i in items} == set(OWN)
    # "quiet" says Caroline in its summary, but has no speakers: the streams never find it.
    assert with_stream(items, "speaker") == {"hike"}
    assert with_stream(items, "speaker_bm25") == {"hike"}
    hike = next(i for i in items if i["conversation_id"] == "hike")
    assert hike["streams"]["speaker"]["rank"] == 1
    assert hike["streams"]["speaker_bm25"]["rank"] == 1
    assert hike["speakers"] == ["Caroline", "Melanie"]
    # Melanie spoke in two conversations: both are her episodes, ranked 1 and 2.
    items = await previous(memory, "Melanie")
    assert with_stream(items, "speaker") == {"hike", "pottery"}
    ranks = sorted(i["streams"]["speaker"]["rank"] for i in items if "speaker" in i["streams"])
    assert ranks == [1, 2]


@pytest.mark.parametrize(
    "query",
    [
        "what did CAROLINE do",
        "caroline",
        "What is caroline's favourite trail?",
        "What is Caroline\u2019s favourite trail?",  # a typographic apostrophe
        "Caroline's",
        "(Caroline)",
    ],
)
async def test_speakers_match_in_any_case_and_possessive(
    memory: EpisodicMemory, query: str
) -> None:
    items = await previous(memory, query)
    assert with_stream(items, "speaker") == {"hike"}, query


@pytest.mark.parametrize("query", ["What did Ann play?", "MARY's games", "mary ann"])
async def test_any_word_of_a_multi_word_speaker_matches(memory: EpisodicMemory, query: str) -> None:
    items = await previous(memory, query)
    assert with_stream(items, "speaker") == {"games"}, query


@pytest.mark.parametrize(
    "query",
    [
        "What did Bob say about hiking?",
        "Carol went hiking",  # words match whole, never as a prefix
        "Annie and Maryann played games",
        "carolinemelanie",
    ],
)
async def test_a_query_naming_no_stored_speaker_has_no_speaker_stream(
    memory: EpisodicMemory, query: str
) -> None:
    items = await previous(memory, query)
    assert items, query  # the other streams still answer
    assert all(not set(SPEAKER_STREAMS) & set(i["streams"]) for i in items), query


async def test_weight_0_removes_each_speaker_stream(memory: EpisodicMemory) -> None:
    query = "What did Caroline say about hiking?"
    for off, on in (("speaker", "speaker_bm25"), ("speaker_bm25", "speaker")):
        items = await previous(memory, query, **{f"{off}_weight": 0})
        assert with_stream(items, off) == set() and with_stream(items, on) == {"hike"}
    items = await previous(memory, query, speaker_weight=0.0, speaker_bm25_weight=0.0)
    assert all(not set(SPEAKER_STREAMS) & set(i["streams"]) for i in items)
    assert {i["conversation_id"] for i in items} == set(OWN)


async def test_the_speaker_weights_count_in_the_fused_score(memory: EpisodicMemory) -> None:
    query = "What did Caroline say about hiking?"
    weights = {"short": 0.05, "long": 0.05, "bm25": 0.3, "speaker": 0.7, "speaker_bm25": 0.4}
    items = await previous(
        memory, query, speaker_weight=0.7, speaker_bm25_weight=0.4, rrf_k=5, **_plain(weights)
    )
    for item in items:
        fused = sum(weights[s] / (5 + v["rank"]) for s, v in item["streams"].items())
        assert item["score"] == pytest.approx(fused, rel=1e-4)


def _plain(weights: dict[str, float]) -> dict[str, float]:
    """The recall options of the streams every query has, and no diversity (exact scores)."""
    return {
        "short_weight": weights["short"],
        "long_weight": weights["long"],
        "bm25_weight": weights["bm25"],
        "conversation_diversity": 0.0,
    }


# -- tenant isolation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Caroline hiking in the hills with Ann", {"hike", "games"}),
        ("Caroline", {"hike"}),
        ("Ann", {"games"}),
    ],
)
async def test_the_speaker_streams_stay_within_the_user_and_agent(
    memory: EpisodicMemory, query: str, expected: set[str]
) -> None:
    # The speaker streams carry the fusion almost alone: had they searched other tenants,
    # their episodes (the query's very words, Caroline and Ann among their speakers) would
    # come first, and the user's own speaker episodes would rank below 1.
    tiny = {"short": 1e-6, "long": 1e-6, "bm25": 1e-6}
    items = await previous(memory, query, previous_conversation_limit=50, **_plain(tiny))
    assert {(i["user_id"], i["agent_id"]) for i in items} == {(U, A)}
    assert {i["conversation_id"] for i in items} <= set(OWN)
    for stream in SPEAKER_STREAMS:
        found = [i for i in items if stream in i["streams"]]
        ranks = sorted(i["streams"][stream]["rank"] for i in found)
        if stream == "speaker":
            assert {i["conversation_id"] for i in found} == expected, query
        # Each stream's ranks are counted among this tenant's episodes only: 1, 2, ... n.
        assert ranks == list(range(1, len(found) + 1)), (query, stream)
    # The speaker streams lead the fusion here: their episodes come first.
    assert {i["conversation_id"] for i in items[: len(expected)]} == expected


async def test_the_other_tenants_get_their_own_speaker_episodes(memory: EpisodicMemory) -> None:
    for owner in FOREIGN:
        res = await memory.recall(
            user_id=owner["user_id"], agent_id=owner["agent_id"], query="Caroline"
        )
        items = res["previous_conversations"]
        assert [(i["user_id"], i["agent_id"]) for i in items] == [
            (owner["user_id"], owner["agent_id"])
        ]
        assert items[0]["streams"]["speaker"]["rank"] == 1


async def test_the_same_conversation_side_is_narrowed_by_speaker_too(
    memory: EpisodicMemory,
) -> None:
    res = await memory.recall(
        user_id=U, agent_id=A, query="What did Melanie make?", conversation_id="pottery"
    )
    [same] = res["same_conversation"]
    assert same["conversation_id"] == "pottery" and same["streams"]["speaker"]["rank"] == 1
    previous_ = res["previous_conversations"]
    assert "pottery" not in {i["conversation_id"] for i in previous_}
    assert with_stream(previous_, "speaker") == {"hike"}
    assert (
        next(i for i in previous_ if i["conversation_id"] == "hike")["streams"]["speaker"]["rank"]
        == 1
    )


async def test_without_stream_ranks_the_hits_and_order_are_the_same(
    memory: EpisodicMemory,
) -> None:
    for query in ("What did Caroline say about hiking?", "Melanie pottery", "Bob"):
        ranked = await previous(memory, query)
        plain = await previous(memory, query, with_stream_ranks=False)
        scores = [h["score"] for h in ranked]
        assert len(set(scores)) == len(scores), "a tie would leave the order to the engine"
        assert [h["point_id"] for h in plain] == [h["point_id"] for h in ranked], query
        assert [h["score"] for h in plain] == pytest.approx(scores, rel=1e-6)
        assert all("streams" not in h for h in plain)


async def test_a_long_querys_later_words_are_not_matched(memory: EpisodicMemory) -> None:
    # A query is matched by its first 192 distinct runs of one to three words: after 64
    # distinct words "Caroline" alone is the 192nd run, after 65 it is past the limit.
    def after(n: int) -> str:
        return " ".join(f"w{i}" for i in range(n)) + " Caroline"

    assert with_stream(await previous(memory, after(65)), "speaker") == set()
    assert with_stream(await previous(memory, after(64)), "speaker") == {"hike"}
    # Repeated runs count once.
    items = await previous(memory, f"{' '.join(['w'] * 200)} Caroline")
    assert with_stream(items, "speaker") == {"hike"}


@pytest.mark.parametrize(
    ("speakers", "query", "named"),
    [
        (["The Bot"], "What did the bot say?", True),
        (["The Bot"], "What is the weather?", False),  # an article names no one alone
        (["The Bot"], "Ask the Bot's opinion", True),
        (["Bot"], "what did bot say", True),
        (["Dr. Ann Smith"], "What did Smith prescribe?", True),
        (["Dr. Ann Smith"], "Did the dr call?", False),  # nor does a title
        (["Dr. Ann Smith"], "What did dr ann smith say?", True),
        (["Anna Maria de la Cruz"], "What did Cruz say?", True),
        (["Anna Maria de la Cruz"], "the de la thing", False),
        (["Anna Maria de la Cruz"], "Maria", True),
    ],
)
async def test_names_match_whole_or_by_their_own_words(
    memory: EpisodicMemory, speakers: list[str], query: str, *, named: bool
) -> None:
    await memory.memorize_many([episode("new", speakers, "A talk about the weather")])
    found = with_stream(await previous(memory, query), "speaker")
    assert ("new" in found) is named, (speakers, query, found)


# -- the derived field stays inside -------------------------------------------------------


async def test_speaker_keys_never_leave_the_store(memory: EpisodicMemory, tmp_path: Path) -> None:
    res = await memory.recall(
        user_id=U, agent_id=A, query="Caroline hiking", conversation_id="hike"
    )
    items = res["same_conversation"] + res["previous_conversations"]
    plain = await memory.recall(
        user_id=U, agent_id=A, query="Caroline", conversation_id="hike", with_stream_ranks=False
    )
    items += plain["same_conversation"] + plain["previous_conversations"]
    items += await memory.read_recent(10, user_id=U, agent_id=A)
    items += [await memory.get(i["point_id"], user_id=U, agent_id=A) for i in items[:2]]
    assert len(items) > 4
    for item in items:
        assert "speaker_keys" not in item
        assert "speakers" in item
    block = await memory.recall_block(user_id=U, agent_id=A, query="Caroline", max_tokens=2000)
    assert "caroline" not in block.replace("Caroline", "")  # only as given, never case-folded
    path = tmp_path / "out.jsonl"
    assert await memory.export(path, user_id=U, agent_id=A) == len(OWN)
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        assert "speaker_keys" not in record
        assert record["speakers"] == OWN[record["conversation_id"]][0]


async def test_export_then_import_keeps_speakers_and_their_streams(
    memory: EpisodicMemory, tmp_path: Path
) -> None:
    path = tmp_path / "speakers.jsonl"
    await memory.export(path, user_id=U, agent_id=A)
    fresh = await open_memory("edge", tmp_path / "fresh")
    try:
        report = await fresh.import_(path)
        assert len(report.imported) == len(OWN) and not report.skipped
        for point_id in report.imported:
            mine = await memory.get(point_id, user_id=U, agent_id=A)
            theirs = await fresh.get(point_id, user_id=U, agent_id=A)
            assert theirs["speakers"] == mine["speakers"]
            assert "speaker_keys" not in theirs
        # The indexed words are rebuilt from `speakers` on import.
        items = (await fresh.recall(user_id=U, agent_id=A, query="caroline's"))[
            "previous_conversations"
        ]
        assert with_stream(items, "speaker") == {"hike"}
        again = tmp_path / "again.jsonl"
        await fresh.export(again, user_id=U, agent_id=A)
        assert sorted(again.read_text(encoding="utf-8").splitlines()) == sorted(
            path.read_text(encoding="utf-8").splitlines()
        )
    finally:
        await fresh.aclose()


async def test_a_record_without_speakers_imports_with_none(tmp_path: Path) -> None:
    # An export made before `speakers` existed has no such key.
    record = episode("old", [], "An older export line about hiking")
    del record["speakers"]
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    mem = await open_memory("memory", tmp_path)
    try:
        [point_id] = (await mem.import_(path)).imported
        assert (await mem.get(point_id, user_id=U, agent_id=A))["speakers"] == []
    finally:
        await mem.aclose()


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "speakers",
    [
        [""],
        ["   "],
        ["Caroline", "\t\n"],
        [f"s{i}" for i in range(65)],
        [1],
        [None],
        "Caroline",  # one string, not a list of them
        {"Caroline": 1},
        ["x" * 10_000],
    ],
)
async def test_bad_speakers_are_refused_and_nothing_is_stored(
    memory: EpisodicMemory, speakers: object
) -> None:
    before = await memory.count(user_id=U, agent_id=A)
    good = episode("new", ["Caroline"], "Caroline again")
    with pytest.raises(ValidationError, match="speakers"):
        await memory.memorize_many([good, {**good, "speakers": speakers}])
    with pytest.raises(ValidationError, match="speakers"):
        ConversationEpisode.parse({**good, "speakers": speakers})
    assert await memory.count(user_id=U, agent_id=A) == before
    items = await previous(memory, "Caroline", previous_conversation_limit=50)
    assert "new" not in {i["conversation_id"] for i in items}


async def test_64_speakers_are_stored_and_each_is_matched(memory: EpisodicMemory) -> None:
    names = [f"Speaker{i}" for i in range(64)]
    await memory.memorize_many([episode("crowd", names, "A crowded meeting")])
    for name in (names[0], names[-1].upper()):
        items = await previous(memory, f"What did {name} say?")
        assert with_stream(items, "speaker") == {"crowd"}
        assert next(i for i in items if i["conversation_id"] == "crowd")["speakers"] == names


BAD_WEIGHTS: list[object] = [-0.1, -1, math.nan, math.inf, -math.inf, "0.2", None, True, False]


@pytest.mark.parametrize("name", ["speaker_weight", "speaker_bm25_weight"])
async def test_a_bad_speaker_weight_is_refused(memory: EpisodicMemory, name: str) -> None:
    before = await memory.count(user_id=U, agent_id=A)
    for bad in BAD_WEIGHTS:
        with pytest.raises(ValidationError, match=name):
            await previous(memory, "Caroline", **{name: bad})
        # Refused even when no side is searched.
        with pytest.raises(ValidationError, match=name):
            await previous(memory, "Caroline", previous_conversation_limit=0, **{name: bad})
        with pytest.raises(ConfigurationError, match=name):
            validate_recall_options({name: bad})
    assert await memory.count(user_id=U, agent_id=A) == before


@pytest.mark.parametrize("name", ["speaker_weight", "speaker_bm25_weight"])
def test_good_speaker_weights_pass_the_adapter_check(name: str) -> None:
    for good in (0, 0.0, 0.2, 1, 5.5):
        assert validate_recall_options({name: good}, owner="X") == {name: good}


async def test_the_speaker_streams_cannot_be_the_only_ones(memory: EpisodicMemory) -> None:
    # The speaker streams only add candidates to a query that has other streams.
    with pytest.raises(ValidationError, match="all 0"):
        await previous(
            memory, "Caroline", short_weight=0, long_weight=0, bm25_weight=0, speaker_weight=1
        )
