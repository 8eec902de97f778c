"""A cancelled turn (a timeout around the agent) records each message once, never twice.

The block records a span as one or more episodes, asking the summarizer for each. Cancelled
between two of them (a summarizer call that times out, `asyncio.wait_for` around the run),
the first part was already queued while the block had not yet counted the span as
recorded: the next turn recorded the whole span again, storing the first part twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import StallingModel
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


def _turn() -> list[ChatMessage]:
    # Over the block's 100-character episode limit: the exchange becomes several episodes.
    long_answer = " ".join(
        f"Step {i}: check the parcel label and the courier tracking." for i in range(4)
    )
    return [
        ChatMessage(role="user", content="My blender from order 1234 arrived broken."),
        ChatMessage(role="assistant", content=long_answer),
        ChatMessage(role="user", content="Thanks, and the refund?"),
    ]


async def _ranges(memory: EpisodicMemory, user: str) -> list[tuple[int, int, Any]]:
    items = await memory.read_recent(100, user_id=user, agent_id=AGENT, conversation_id="c1")
    return sorted((e["start_index"], e["end_index"], e["metadata"].get("part")) for e in items)


@pytest.mark.parametrize("stall_at", [1, 2])
async def test_cancelled_recording_is_retried_without_duplicates(
    memory: EpisodicMemory, user: str, stall_at: int
) -> None:
    summarizer = StallingModel(stall_at)
    block = EpisodicMemoryBlock(
        memory=memory,
        user_id=user,
        agent_id=AGENT,
        conversation_id="c1",
        summarizer=summarizer,
        long_summary_chars=100,
    )
    messages = _turn()
    turn = asyncio.create_task(block.aget(messages=messages))
    await summarizer.stalled.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await block.recorder.flush()
    # The next turn records what the cancelled one did not; nothing is stored twice.
    await block.aget(messages=messages)
    await block.recorder.flush()
    ranges = await _ranges(memory, user)
    assert len(ranges) == len(set(ranges)), f"an episode was stored twice: {ranges}"
    # Contiguous, no gap: messages 0 and 1 (the exchange before the last user message).
    assert ranges[0][0] == 0 and ranges[-1][1] == 1
    assert block.recorder.stats().pending == 0
