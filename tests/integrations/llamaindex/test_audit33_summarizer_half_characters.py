"""A block summarizer whose answer holds half a character (a lone surrogate).

The block stored the summarizer's answer as the episode's short summary; the store refused
the lone surrogate and the episode was rejected, so the exchange (already gone from
short-term memory) was lost for one bad character of a summary. The half character is now
read as U+FFFD, as the messages' own text is, and the episode is recorded.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


async def test_a_summary_with_half_a_character_still_records_the_exchange(
    memory: EpisodicMemory, user: str
) -> None:
    async def summarize(prompt: str) -> str:
        return "Refund of order 1234 \ud83d asked."

    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id="support", summarizer=summarize
    )
    await block.aput(
        [
            ChatMessage(role="user", content="Refund order 1234 please."),
            ChatMessage(role="assistant", content="Done."),
        ],
        session_id="s1",
    )
    [episode] = await memory.read_recent(5, user_id=user, agent_id="support")
    assert episode["short_summary_text"] == "Refund of order 1234 \ufffd asked."
    assert "Refund order 1234 please." in episode["long_summary_text"]
