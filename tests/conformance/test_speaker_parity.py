"""The speaker streams and conversation diversity answer alike on every backend.

The same episodes (the same point ids) go into Qdrant Edge and into each other registered
backend, embedded by the real bundled models with every default stream; each query must bring
back the same episodes in the same order, found by the same streams at the same ranks, with
the same scores. Speaker streams stay within the user and agent on each backend.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from episodex import Embedder, EpisodicMemory

from .backends import BACKENDS, drop_server_collections, engine_options

U, A = "user-1", "agent-1"
T0 = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
#: (conversation, speakers, short summary, long summary)
EPISODES: list[tuple[str, list[str], str, str]] = [
    (
        "s1",
        ["Caroline", "Melanie"],
        "Caroline went to an LGBTQ support group",
        "Caroline told Melanie she went to an LGBTQ support group and felt accepted.",
    ),
    (
        "s1",
        ["Caroline", "Melanie"],
        "Melanie painted a sunrise",
        "Melanie showed Caroline the sunrise she painted over the lake last year.",
    ),
    (
        "s2",
        ["Melanie"],
        "Melanie ran a charity race",
        "Melanie ran a charity race for mental health on Saturday.",
    ),
    (
        "s2",
        ["Melanie", "Jo Ann"],
        "Jo Ann joined the race",
        "Jo Ann ran alongside Melanie and talked about her new pottery class.",
    ),
    (
        "s3",
        ["Caroline"],
        "Caroline researched adoption agencies",
        "Caroline is looking into adoption agencies to build a family.",
    ),
    (
        "s4",
        [],
        "A support group meeting",
        "Someone described a support group meeting downtown.",
    ),
]
#: Another user and another agent with the very same episodes: never recalled for U and A.
OTHERS = [("user-2", A), (U, "agent-2")]
QUERIES = [
    "What did Caroline research?",
    "When did Melanie run a charity race?",
    "what did jo ann's pottery class involve",
    "Who went to a support group?",  # names no speaker
]


def point_id(n: int, owner: int) -> str:
    return str(uuid.UUID(int=(owner << 64) | (n + 1)))


def records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for owner, (user, agent) in enumerate([(U, A), *OTHERS]):
        for n, (conversation, speakers, short, long) in enumerate(EPISODES):
            out.append(
                {
                    "point_id": point_id(n, owner),
                    "user_id": user,
                    "agent_id": agent,
                    "conversation_id": conversation,
                    "short_summary": short,
                    "long_summary": long,
                    "speakers": speakers,
                    "timestamp_begin": T0 + timedelta(days=n),
                }
            )
    return out


async def loaded(backend: str, folder: Path, embedder: Embedder) -> EpisodicMemory:
    path, options = engine_options(backend, folder)
    mem = EpisodicMemory(path, embedder=embedder, **options)
    await mem.memorize_many(records())
    return mem


@pytest.fixture
async def edge(tmp_path: Path, embedder: Embedder) -> AsyncIterator[EpisodicMemory]:
    mem = await loaded("edge", tmp_path, embedder)
    yield mem
    await mem.aclose()


@pytest.fixture(params=[b for b in BACKENDS if b != "edge"])
async def other(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
) -> AsyncIterator[EpisodicMemory]:
    mem = await loaded(request.param, tmp_path, embedder)
    yield mem
    drop_server_collections(mem.engine)
    await mem.aclose()


def answer(items: list[dict[str, Any]]) -> list[tuple[str, dict[str, int]]]:
    return [(i["point_id"], {s: v["rank"] for s, v in i["streams"].items()}) for i in items]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("diversity", [0.0, 0.03, 0.5])
async def test_every_backend_gives_the_same_answer(
    edge: EpisodicMemory, other: EpisodicMemory, query: str, diversity: float
) -> None:
    results: list[dict[str, list[dict[str, Any]]]] = []
    for mem in (edge, other):
        results.append(
            await mem.recall(
                user_id=U,
                agent_id=A,
                query=query,
                conversation_id="s2",
                same_conversation_limit=5,
                conversation_diversity=diversity,
            )
        )
    for side in ("same_conversation", "previous_conversations"):
        mine, theirs = (r[side] for r in results)
        scores = [i["score"] for i in mine]
        assert len(set(scores)) == len(scores), "a tie would leave the order to each engine"
        assert answer(mine) == answer(theirs), (query, side)
        assert scores == pytest.approx([i["score"] for i in theirs], rel=1e-4)
        for item in mine:
            assert (item["user_id"], item["agent_id"]) == (U, A)
            assert "speaker_keys" not in item


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_speaker_streams_find_the_named_speakers_episodes(
    backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    mem = await loaded(backend, tmp_path, embedder)
    try:
        expected = {
            QUERIES[0]: {point_id(0, 0), point_id(1, 0), point_id(4, 0)},  # Caroline
            QUERIES[1]: {point_id(1, 0), point_id(2, 0), point_id(3, 0), point_id(0, 0)},
            QUERIES[2]: {point_id(3, 0)},  # Jo Ann (either word)
            QUERIES[3]: set[str](),
        }
        for query, found in expected.items():
            res = await mem.recall(
                user_id=U, agent_id=A, query=query, previous_conversation_limit=20
            )
            items = res["previous_conversations"]
            assert len(items) == len(EPISODES)
            assert {i["point_id"] for i in items if "speaker" in i["streams"]} == found, query
            ranks = sorted(
                i["streams"]["speaker"]["rank"] for i in items if "speaker" in i["streams"]
            )
            assert ranks == list(range(1, len(found) + 1)), query
            # BM25 among them finds those that share a word with the query.
            assert {i["point_id"] for i in items if "speaker_bm25" in i["streams"]} <= found
    finally:
        drop_server_collections(mem.engine)
        await mem.aclose()
