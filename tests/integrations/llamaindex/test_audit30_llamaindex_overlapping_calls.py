"""Overlapping `aget`/`aput` calls of one session record each message exactly once.

The block reads how far a session is recorded, asks the summarizer (an await), and only then
counts the span as recorded. Two calls of the same session overlapping there (one `Memory`
shared by two requests of a chat, a flush while a read summarises) both read the same
position: both recorded the same stretch, storing it twice. Now the calls of one session take
their turn for that read-summarise-count step.
"""

from __future__ import annotations

import asyncio

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


class _HeldSummarizer:
    """An async summarizer whose first answer waits until `go` is set."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.go = asyncio.Event()
        self.calls = 0

    async def __call__(self, prompt: str) -> str:
        self.calls += 1
        if self.calls == 1:
            self.asked.set()
            await self.go.wait()
        return f"summary {self.calls}"


def _history() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="My blender from order 1234 arrived broken."),
        ChatMessage(role="assistant", content="Sorry! I have opened a refund for it."),
        ChatMessage(role="user", content="Thanks, and when does the refund arrive?"),
    ]


def _question() -> ChatMessage:
    return ChatMessage(role="user", content="Can I get a replacement instead?")


async def _ranges(memory: EpisodicMemory, user: str) -> list[tuple[int, int]]:
    items = await memory.read_recent(100, user_id=user, agent_id=AGENT, conversation_id="c1")
    return sorted((e["start_index"], e["end_index"]) for e in items)


@pytest.mark.parametrize("second", ["aget", "aput flushed"])
async def test_overlapping_calls_record_each_message_once(
    memory: EpisodicMemory, user: str, second: str
) -> None:
    summarizer = _HeldSummarizer()
    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="c1", summarizer=summarizer
    )
    messages = _history()
    first = asyncio.create_task(block.aget(messages=messages))
    await summarizer.asked.wait()  # the first call summarises the exchange 0..2
    if second == "aget":
        other = asyncio.create_task(block.aget(messages=messages))
    else:
        # Memory flushes the oldest exchange out of short-term memory meanwhile.
        other = asyncio.create_task(block.aput(messages[:2], from_short_term_memory=True))
    for _ in range(10):
        await asyncio.sleep(0)  # lets the second call reach its summarizer (no time passes)
    summarizer.go.set()
    await asyncio.gather(first, other)
    await block.recorder.flush()
    # The exchange of messages 0..1 once (message 2 waits for its answer).
    assert await _ranges(memory, user) == [(0, 1)]
    # The next turn records the next exchange, once, from message 2 on.
    # Short-term memory holds what was not flushed out of it.
    later = messages if second == "aget" else messages[2:]
    later += [ChatMessage(role="assistant", content="In 3 days."), _question()]
    await block.aget(messages=later)
    await block.recorder.flush()
    assert await _ranges(memory, user) == [(0, 1), (2, 3)]
