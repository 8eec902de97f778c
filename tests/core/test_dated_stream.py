"""The `dated` stream: a query naming a period also searches that period's episodes.

`named_period` reads only dates that need no reference time; a recall whose query names one
fuses the short-summary search among the episodes of that period (widened by 14 days) as the
`dated` stream, within the same user and agent as every other stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError, named_period
from episodex.cli import main
from episodex.testing import HashEmbedder


def utc(year: int, month: int, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("What did Joanna watch on 1 May, 2022?", (utc(2022, 5, 1), utc(2022, 5, 2))),
        ("news shared on 9th December 2023", (utc(2023, 12, 9), utc(2023, 12, 10))),
        ("What happened on October 13, 2023?", (utc(2023, 10, 13), utc(2023, 10, 14))),
        ("the note from Sept. 3rd, 2021", (utc(2021, 9, 3), utc(2021, 9, 4))),
        ("logs of 2024-02-29", (utc(2024, 2, 29), utc(2024, 3, 1))),
        ("Where did Joanna travel to in July 2022?", (utc(2022, 7, 1), utc(2022, 8, 1))),
        (
            "Which tournament did Nate win in the beginning of November 2022?",
            (utc(2022, 11, 1), utc(2022, 12, 1)),
        ),
        ("a trip in December 2023", (utc(2023, 12, 1), utc(2024, 1, 1))),
        ("What state did Joanna visit in summer 2021?", (utc(2021, 6, 1), utc(2021, 9, 1))),
        ("skiing in winter 2023", (utc(2022, 12, 1), utc(2024, 3, 1))),
        (
            "How many times has Melanie gone to the beach in 2023?",
            (utc(2023, 1, 1), utc(2024, 1, 1)),
        ),
        ("between May 2022 and July 2022", (utc(2022, 5, 1), utc(2022, 8, 1))),
        # No such day: the month it names still stands.
        ("on 31 February, 2023", (utc(2023, 2, 1), utc(2023, 3, 1))),
    ],
)
def test_named_period_reads_days_months_seasons_and_years(
    text: str, period: tuple[datetime, datetime]
) -> None:
    assert named_period(text) == period


@pytest.mark.parametrize(
    "text",
    [
        "What did I do yesterday?",
        "plans for last week",
        "Which outdoor spot did Joanna visit in May?",  # a month without its year
        "May I ask about 2023 goals?",  # a year with no preposition before it
        "I have 2023 photos",
        "2023-13-01",
        "",
    ],
)
def test_named_period_names_nothing_it_cannot_place(text: str) -> None:
    assert named_period(text) is None


@pytest.fixture(params=["edge", "memory"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    if request.param == "edge":
        mem = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder())
    else:
        mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    # The same words in May and in October, and in October for another user.
    episodes: list[dict[str, Any]] = [
        {"user_id": "u", "conversation_id": "may", "timestamp_begin": utc(2023, 5, 8)},
        {"user_id": "u", "conversation_id": "october", "timestamp_begin": utc(2023, 10, 20)},
        {"user_id": "other", "conversation_id": "theirs", "timestamp_begin": utc(2023, 10, 9)},
    ]
    await mem.memorize_many(
        [
            {
                **ep,
                "agent_id": "a",
                "short_summary": "I painted a sunset over the lake",
                "long_summary": "We talked about painting a sunset over the lake",
            }
            for ep in episodes
        ]
    )
    yield mem
    await mem.aclose()


async def _previous(mem: EpisodicMemory, query: str, **options: Any) -> list[dict[str, Any]]:
    res = await mem.recall(user_id="u", agent_id="a", query=query, **options)
    return res["previous_conversations"]


async def test_a_named_period_brings_its_episodes_first(memory: EpisodicMemory) -> None:
    for month in ("May", "October"):
        hits = await _previous(memory, f"What did I paint in {month} 2023?")
        assert hits[0]["conversation_id"] == month.lower()
        assert "dated" in hits[0]["streams"] and "dated" not in hits[1]["streams"]
        assert hits[0]["streams"]["dated"]["rank"] == 1


async def test_the_dated_stream_stays_within_the_user(memory: EpisodicMemory) -> None:
    # The other user's episode is in October too: it never comes back, by any stream.
    hits = await _previous(memory, "What did I paint on 9 October, 2023?")
    assert {h["conversation_id"] for h in hits} == {"may", "october"}
    # 20 October is within 14 days of the 9th: the user's own October episode is dated.
    assert "dated" in hits[0]["streams"] and hits[0]["conversation_id"] == "october"


async def test_no_period_or_weight_0_means_no_dated_stream(memory: EpisodicMemory) -> None:
    for query, options in (
        ("What did I paint?", {}),
        ("What did I paint in October 2023?", {"dated_weight": 0.0}),
        ("What did I paint in June 2020?", {}),  # a period with no episodes
    ):
        hits = await _previous(memory, query, **options)
        assert len(hits) == 2 and all("dated" not in h["streams"] for h in hits), query


async def test_without_stream_ranks_the_order_is_the_same(memory: EpisodicMemory) -> None:
    query = "What did I paint in May 2023?"
    ranked = await _previous(memory, query)
    plain = await _previous(memory, query, with_stream_ranks=False)
    assert [h["point_id"] for h in plain] == [h["point_id"] for h in ranked]
    assert plain[0]["conversation_id"] == "may"


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.3", True])
async def test_a_bad_dated_weight_is_a_validation_error(
    memory: EpisodicMemory, bad: object
) -> None:
    before = await memory.count(user_id="u", agent_id="a")
    with pytest.raises(ValidationError, match="dated_weight"):
        await _previous(memory, "What did I paint in May 2023?", dated_weight=bad)
    assert await memory.count(user_id="u", agent_id="a") == before


def test_the_cli_takes_dated_weight(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "cli")
    for conversation, when in (
        ("may", "2023-05-08T10:00:00+00:00"),
        ("oct", "2023-10-20T10:00:00+00:00"),
    ):
        episode = tmp_path / f"{conversation}.json"
        episode.write_text(
            json.dumps(
                {
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": conversation,
                    "short_summary": "I painted a sunset",
                    "long_summary": "We talked about a sunset",
                    "timestamp_begin": when,
                }
            )
        )
        assert main(["--path", store, "add", "--from-json", str(episode)]) == 0
    recall = ["--path", store, "recall", "--user", "u", "--agent", "a", "--json"]
    capsys.readouterr()
    assert main([*recall, "What did I paint in October 2023?"]) == 0
    first = json.loads(capsys.readouterr().out)["previous_conversations"][0]
    assert first["conversation_id"] == "oct" and "dated" in first["streams"]
    assert main([*recall, "--dated-weight", "0", "What did I paint in October 2023?"]) == 0
    assert all(
        "dated" not in hit["streams"]
        for hit in json.loads(capsys.readouterr().out)["previous_conversations"]
    )


async def test_a_bad_dated_weight_is_refused_even_when_nothing_is_searched(
    memory: EpisodicMemory,
) -> None:
    with pytest.raises(ValidationError, match="dated_weight"):
        await memory.recall(
            user_id="u",
            agent_id="a",
            query="in May 2023",
            previous_conversation_limit=0,
            dated_weight=-1.0,
        )
