"""Speakers and queries meet whatever Unicode form their text came in.

"José" can arrive composed (é, one code point) or decomposed (e and a combining accent),
for example from a macOS file name or another client. Read word by word as they came, the
decomposed form lost its accent (the accent is no word character): it never matched the
composed query and matched "Jose" instead. Both sides are now normalised (NFKC) first, which
also reads full-width letters as the letters they are.
"""

from __future__ import annotations

import unicodedata
from collections.abc import AsyncIterator

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder

U, A = "u", "a"
COMPOSED, DECOMPOSED = "Jos\u00e9", "Jose\u0301"


@pytest.fixture
async def memory() -> AsyncIterator[EpisodicMemory]:
    async with EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False) as mem:
        yield mem


async def speaker_hits(mem: EpisodicMemory, query: str) -> set[str]:
    res = await mem.recall(user_id=U, agent_id=A, query=query)
    return {
        i["conversation_id"] for i in res["previous_conversations"] if "speaker" in i["streams"]
    }


async def store(mem: EpisodicMemory, conversation: str, speaker: str) -> None:
    await mem.memorize_many(
        [
            {
                "user_id": U,
                "agent_id": A,
                "conversation_id": conversation,
                "short_summary": "A trip to the coast",
                "long_summary": "They talked about a trip to the coast",
                "speakers": [speaker],
            }
        ]
    )


def test_the_two_forms_are_the_same_name() -> None:
    assert COMPOSED != DECOMPOSED
    assert unicodedata.normalize("NFC", DECOMPOSED) == COMPOSED


@pytest.mark.parametrize(
    ("stored", "asked"),
    [
        (DECOMPOSED, COMPOSED),
        (COMPOSED, DECOMPOSED),
        (DECOMPOSED, DECOMPOSED.upper()),
        (COMPOSED, "\uff2a\uff2f\uff33\u00c9"),  # full-width JOS, then É
        ("Zoe\u0308", "zo\u00eb's"),
    ],
)
async def test_a_name_matches_in_either_form(
    memory: EpisodicMemory, stored: str, asked: str
) -> None:
    await store(memory, "trip", stored)
    assert await speaker_hits(memory, f"Where did {asked} go?") == {"trip"}


async def test_an_accent_still_tells_two_names_apart(memory: EpisodicMemory) -> None:
    await store(memory, "jose", "Jose")
    await store(memory, "jose-accent", DECOMPOSED)
    assert await speaker_hits(memory, "Where did Jose go?") == {"jose"}
    assert await speaker_hits(memory, f"Where did {COMPOSED} go?") == {"jose-accent"}
    res = await memory.recall(user_id=U, agent_id=A, query="coast")
    # The speakers are returned as they were given; only the matching is normalised.
    assert {i["speakers"][0] for i in res["previous_conversations"]} == {"Jose", DECOMPOSED}
