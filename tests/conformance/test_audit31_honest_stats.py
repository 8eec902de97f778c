"""`stats` names the time the first episode began, whichever episode ended first.

`first_episode_at` was the begin time of the episode that *ended* first: with a long episode
(begun on the 1st, ended on the 10th) and a short one inside it (the 5th to the 6th), stats
said the user's history began on the 5th, and `episodex stats` printed that date. Now it is
the earliest begin time of any episode (and `last_episode_at` the latest end time).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder

from .backends import BACKENDS, engine_options


@pytest.mark.parametrize("backend", BACKENDS)
async def test_first_episode_at_is_the_earliest_begin(backend: str, tmp_path: Path) -> None:
    path, options = engine_options(backend, tmp_path)
    async with EpisodicMemory(path, embedder=HashEmbedder(), splade=False, **options) as mem:
        for conv, begin, end in (
            ("long", datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 10, tzinfo=UTC)),
            ("short", datetime(2024, 1, 5, tzinfo=UTC), datetime(2024, 1, 6, tzinfo=UTC)),
            ("late", datetime(2024, 1, 7, tzinfo=UTC), datetime(2024, 1, 8, tzinfo=UTC)),
        ):
            await mem.memorize(
                short_summary=f"the {conv} chat",
                long_summary=f"details of the {conv} chat",
                user_id="u",
                agent_id="a",
                conversation_id=conv,
                timestamp_begin=begin,
                timestamp_end=end,
            )
        stats = await mem.stats(user_id="u", agent_id="a")
    assert stats["first_episode_at"] == datetime(2024, 1, 1, tzinfo=UTC)
    assert stats["last_episode_at"] == datetime(2024, 1, 10, tzinfo=UTC)
    assert stats["episodes"] == 3 and stats["conversations"] == 3
