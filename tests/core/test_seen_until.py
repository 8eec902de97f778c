"""`seen_until`: same-conversation episodes already in the model's history are left out."""

from __future__ import annotations

from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError


async def test_seen_until_leaves_out_episodes_in_the_history(embedder: Any) -> None:
    async with EpisodicMemory(location=":memory:", embedder=embedder) as mem:
        common = {"user_id": "u", "agent_id": "a", "conversation_id": "c"}
        await mem.memorize_many(
            [
                {
                    "short_summary": "seat: aisle",
                    "long_summary": "aisle seat wanted",
                    "start_index": 0,
                    "end_index": 1,
                    **common,
                },
                {
                    "short_summary": "seat: window",
                    "long_summary": "window seat for kids",
                    "start_index": 2,
                    "end_index": 3,
                    **common,
                },
            ]
        )
        everything = await mem.recall(user_id="u", agent_id="a", conversation_id="c", query="seat")
        assert len(everything["same_conversation"]) == 2
        res = await mem.recall(
            user_id="u", agent_id="a", conversation_id="c", query="seat", seen_until=2
        )
        assert [i["short_summary_text"] for i in res["same_conversation"]] == ["seat: window"]
        res = await mem.recall(
            user_id="u", agent_id="a", conversation_id="c", query="seat", seen_until=4
        )
        assert res["same_conversation"] == []
        # The window from message 2 on (a framework's short-term memory) leaves out episode 2.
        res = await mem.recall(
            user_id="u", agent_id="a", conversation_id="c", query="seat", seen_from=2
        )
        assert [i["short_summary_text"] for i in res["same_conversation"]] == ["seat: aisle"]
        with pytest.raises(ValidationError, match="before seen_from"):
            await mem.recall(user_id="u", agent_id="a", query="seat", seen_from=3, seen_until=1)
        with pytest.raises(ValidationError, match="seen_until"):
            await mem.recall(user_id="u", agent_id="a", query="seat", seen_until=-1)
