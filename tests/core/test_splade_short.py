"""The SPLADE-short stream: the short summary's own learned sparse vector, next to the one over
both summaries, fused with its own weight on both engines and named in each hit's streams."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Unpack

import pytest
from episodex import (
    BundledMiniLMEmbedder,
    EpisodicMemory,
    RecallOptions,
    SyncEpisodicMemory,
    ValidationError,
)
from episodex.cli import main

# The kitten is only in the long summary of "weather" (a neighbouring line of the span): the
# stream over both summaries finds it there, the short-summary stream cannot.
EPISODES = [
    ("I adopted a puppy from the shelter.", "We talked about hiking.\nI adopted a puppy.", "pup"),
    ("Nice weather for the beach today.", "I got a kitten last week.\nNice weather.", "weather"),
    ("My sister moved to Boston for work.", "My sister moved to Boston.", "boston"),
]


def _learned(splade: float, splade_short: float) -> RecallOptions:
    """Options that weigh only the two learned sparse streams."""
    return {
        "short_weight": 0.0,
        "long_weight": 0.0,
        "bm25_weight": 0.0,
        "splade_weight": splade,
        "splade_short_weight": splade_short,
    }


async def _fill(mem: EpisodicMemory) -> None:
    await mem.memorize_many(
        [
            {
                "short_summary": short,
                "long_summary": long,
                "user_id": "u",
                "agent_id": "a",
                "conversation_id": conv,
            }
            for short, long, conv in EPISODES
        ]
    )


@pytest.fixture(params=["edge", "memory"])
async def memory(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: BundledMiniLMEmbedder
) -> AsyncIterator[EpisodicMemory]:
    if request.param == "edge":
        mem = EpisodicMemory(tmp_path / "store", embedder=embedder)
    else:
        mem = EpisodicMemory(location=":memory:", embedder=embedder)
    await _fill(mem)
    yield mem
    await mem.aclose()


async def _top(mem: EpisodicMemory, query: str, **options: Unpack[RecallOptions]) -> dict[str, Any]:
    res = await mem.recall(user_id="u", agent_id="a", query=query, **options)
    return res["previous_conversations"][0]


async def test_default_recall_fuses_five_streams(memory: EpisodicMemory) -> None:
    top = await _top(memory, "Who moved to Boston?")
    assert top["conversation_id"] == "boston"
    assert set(top["streams"]) == {"short", "long", "bm25", "splade", "splade_short"}
    assert top["streams"]["splade_short"]["rank"] == 1


async def test_short_stream_reads_only_the_short_summary(memory: EpisodicMemory) -> None:
    query = "kitten"
    joined = await _top(memory, query, **_learned(1.0, 0.0))
    assert joined["conversation_id"] == "weather" and set(joined["streams"]) == {"splade"}
    short = await _top(memory, query, **_learned(0.0, 1.0))
    assert short["conversation_id"] == "pup" and set(short["streams"]) == {"splade_short"}
    res = await memory.recall(user_id="u", agent_id="a", query=query, **_learned(0.0, 1.0))
    weather = [i for i in res["previous_conversations"] if i["conversation_id"] == "weather"]
    assert all("splade_short" not in i["streams"] for i in weather)


async def test_store_without_splade_refuses_the_short_weight(
    tmp_path: Path, embedder: BundledMiniLMEmbedder
) -> None:
    async with EpisodicMemory(tmp_path / "s", embedder=embedder, splade=False) as mem:
        await _fill(mem)
        top = await _top(mem, "Who moved to Boston?")
        assert set(top["streams"]) == {"short", "long", "bm25"}
        with pytest.raises(ValidationError, match=r"splade_short_weight.*no SPLADE.*reindex"):
            await mem.recall(user_id="u", agent_id="a", query="Boston", splade_short_weight=0.5)
        assert await mem.count(user_id="u", agent_id="a") == 3


async def test_negative_short_weight_is_refused(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="splade_short_weight"):
        await memory.recall(user_id="u", agent_id="a", query="Boston", splade_short_weight=-1.0)


def test_cli_flag_sets_the_short_weight(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, embedder: BundledMiniLMEmbedder
) -> None:
    path = tmp_path / "cli"
    with SyncEpisodicMemory(path, embedder=embedder) as mem:
        mem.memorize_many(
            [
                {
                    "short_summary": short,
                    "long_summary": long,
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": conv,
                }
                for short, long, conv in EPISODES
            ]
        )
    weights = ["--short-weight", "0", "--long-weight", "0", "--bm25-weight", "0"]
    weights += ["--splade-weight", "0", "--splade-short-weight", "1"]
    code = main(["--path", str(path), "recall", "--user", "u", "--agent", "a", "kitten", *weights])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    side = lines[lines.index("previous conversations:") + 1 :]
    # The first row (the best hit) is the first line that starts with a score.
    first = next(line for line in side if line.strip()[:1].isdigit())
    # Columns: score, streams, conversation, point id, summary.
    assert re.split(r"\s{2,}", first.strip())[1:3] == ["splade_short #1", "pup"]
