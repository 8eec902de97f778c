"""A message split into parts gives every part a short summary the store accepts.

A run of whitespace longer than one part (a pasted log, a padded table) became parts of
whitespace only, whose short summary was empty: the store refused those episodes, so the
recorder stored some parts of the message and rejected the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from episodex import EpisodeRecorder, EpisodicMemory, span_episodes
from episodex.testing import HashEmbedder

TEXT = "start " + " " * 5000 + "\u3000" * 1500 + " end"


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def test_every_part_has_a_short_summary_and_every_character() -> None:
    episodes = span_episodes([("user", TEXT)], max_chars=1000)
    assert len(episodes) > 2
    assert all(e.short_summary.strip() for e in episodes)
    assert "".join(e.long_summary.split(": ", 1)[1] for e in episodes) == TEXT.strip()


def test_the_recorder_stores_every_part(memory: EpisodicMemory) -> None:
    episodes = span_episodes([("user", TEXT)], max_chars=1000)
    recorder = EpisodeRecorder(memory)
    ids = asyncio.run(
        recorder.record_many(
            [
                {
                    "short_summary": e.short_summary,
                    "long_summary": e.long_summary,
                    "user_id": "u1",
                    "agent_id": "support",
                    "conversation_id": "c1",
                }
                for e in episodes
            ]
        )
    )
    assert None not in ids
    assert recorder.stats().rejected == 0
    assert memory.store.count(user_id="u1", agent_id="support") == len(episodes)
