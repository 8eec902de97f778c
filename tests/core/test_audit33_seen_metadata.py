"""`seen_metadata`: the seen window of one writer of a conversation leaves out only its episodes.

Two LangGraph threads recording into one conversation each count their own messages, so their
episodes sit at the same positions; a window naming one thread's messages left out the
other's too, though the model never saw them.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, ValidationError, validate_recall_options


async def test_the_window_leaves_out_only_the_episodes_with_that_metadata(embedder: Any) -> None:
    async with EpisodicMemory(location=":memory:", embedder=embedder) as mem:
        common: dict[str, Any] = {"user_id": "u", "agent_id": "a", "conversation_id": "c"}
        await mem.memorize_many(
            [
                {
                    "short_summary": f"seat: {seat}",
                    "long_summary": f"{seat} seat wanted",
                    "start_index": 0,
                    "end_index": 1,
                    "metadata": {"thread_id": thread, "thread_root": "r"},
                    **common,
                }
                for seat, thread in (("aisle", "t1"), ("window", "t2"))
            ]
        )
        res = await mem.recall(**common, query="seat", seen_until=2)
        assert res["same_conversation"] == []
        res = await mem.recall(
            **common,
            query="seat",
            seen_until=2,
            seen_metadata={"thread_id": "t1", "thread_root": "r"},
        )
        assert [i["short_summary_text"] for i in res["same_conversation"]] == ["seat: window"]
        res = await mem.recall(
            **common,
            query="seat",
            seen_until=2,
            seen_metadata={"thread_id": "t1", "thread_root": "x"},
        )
        assert len(res["same_conversation"]) == 2
        with pytest.raises(ValidationError, match="needs seen_from or seen_until"):
            await mem.recall(**common, query="seat", seen_metadata={"thread_id": "t1"})
        with pytest.raises(ValidationError, match="plain metadata keys"):
            await mem.recall(**common, query="seat", seen_until=2, seen_metadata={"a.b": "t1"})
        with pytest.raises(ValidationError, match="seen_metadata"):
            await mem.recall(**common, query="seat", seen_until=2, seen_metadata="t1")  # pyright: ignore[reportArgumentType]


def test_adapters_check_seen_metadata_like_recall() -> None:
    assert validate_recall_options({"seen_metadata": {"thread_id": "t1"}}) == {
        "seen_metadata": {"thread_id": "t1"}
    }
    with pytest.raises(ConfigurationError, match="plain metadata keys"):
        validate_recall_options({"seen_metadata": {"thread_id": 3}})
