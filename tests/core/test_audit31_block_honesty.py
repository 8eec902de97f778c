"""Prompt blocks say which clock their times are on, and never drop a text unmarked.

Stored times are UTC, but `recall_block` showed `when="2024-05-02 06:30"` with no zone: an
episode stored at 23:30 in California read as the next morning, on another date, to a model
that assumes local time. (The task episodes' `<recalled_episodes>` block keeps the original
design's `<completed_at>` layout, which code written for it parses.)
And when a budget left room for an episode's summary but not one word of its details, the
block showed the episode without a `<details>` element at all, as if it had none. Now the
block's times are marked UTC, and details cut to nothing are shown as `...`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta, timezone

from episodex import EpisodicMemory, format_recall
from episodex.testing import HashEmbedder

CALIFORNIA = timezone(timedelta(hours=-7))


async def test_the_block_shows_the_stored_time_marked_utc() -> None:
    async with EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False) as mem:
        await mem.memorize(
            short_summary="late night refund",
            long_summary="the refund was issued late at night",
            user_id="u",
            agent_id="a",
            conversation_id="c",
            timestamp_begin=datetime(2024, 5, 1, 23, 0, tzinfo=CALIFORNIA),
            timestamp_end=datetime(2024, 5, 1, 23, 30, tzinfo=CALIFORNIA),
        )
        block = await mem.recall_block(user_id="u", agent_id="a", query="refund")
    episode = ET.fromstring(block).find(".//episode")
    assert episode is not None
    assert episode.get("when") == "2024-05-02 06:30 UTC"


def test_a_time_of_another_zone_is_shown_in_utc() -> None:
    item = {
        "point_id": "p",
        "conversation_id": "c",
        "timestamp_end": datetime(2024, 5, 1, 23, 30, tzinfo=CALIFORNIA),
        "score": 0.5,
        "short_summary_text": "s",
        "long_summary_text": "l",
    }
    episode = ET.fromstring(format_recall({"previous_conversations": [item]})).find(".//episode")
    assert episode is not None and episode.get("when") == "2024-05-02 06:30 UTC"


def test_details_cut_to_nothing_are_marked() -> None:
    item = {
        "point_id": "p",
        "conversation_id": "c",
        "timestamp_end": datetime(2024, 5, 2, 6, 30, tzinfo=UTC),
        "score": 0.5,
        "short_summary_text": "refund for the blender",
        "long_summary_text": "averyveryverylongwordthatcoststokens " * 300,
    }
    result = {"previous_conversations": [item]}
    seen_marked = False
    for budget in range(40, 120):
        block = format_recall(result, max_tokens=budget)
        if not block:
            continue
        episode = ET.fromstring(block).find(".//episode")
        assert episode is not None
        details = episode.findtext("details")
        # Never left out silently: the details are there, shortened with a mark.
        assert details is not None and details.endswith("..."), (budget, block)
        seen_marked = seen_marked or details == "..."
    assert seen_marked
