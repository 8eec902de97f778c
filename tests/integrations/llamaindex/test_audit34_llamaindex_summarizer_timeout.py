"""A summarizer that never answers no longer holds the block's call for ever.

The block awaited its `summarizer` without a limit: a hung model (a stalled HTTP call) held
`aput` and every later turn of the session, and with them the agent's answer, for ever.
The wait now ends after `summarizer_timeout` seconds (30 by default, like the OpenAI-
compatible embedder's request timeout); the episode is recorded with the extract, as for
any failing summarizer.
"""

from __future__ import annotations

import asyncio

import pytest
from episodex import ConfigurationError, EpisodicMemory
from episodex.testing import StallingModel
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


async def test_a_hung_summarizer_gives_up_and_records_the_extract(
    memory: EpisodicMemory, user: str
) -> None:
    model = StallingModel(stall_at=1)
    block = EpisodicMemoryBlock(
        memory=memory,
        user_id=user,
        agent_id="support",
        summarizer=model,
        summarizer_timeout=0.2,
    )
    exchange = [
        ChatMessage(role="user", content="Refund order 1234 please."),
        ChatMessage(role="assistant", content="Done, order 1234 is refunded."),
    ]
    # Far above the option: without it, this wait is what ends the call.
    await asyncio.wait_for(block.aput(exchange, session_id="s1"), 20)
    assert model.stalled.is_set()
    [episode] = await memory.read_recent(5, user_id=user, agent_id="support")
    assert "Refund order 1234" in episode["short_summary_text"]


def test_the_summarizer_timeout_has_a_default_and_refuses_nonsense(
    memory: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id="support")
    assert block.summarizer_timeout == 30.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError, match="summarizer_timeout"):
            EpisodicMemoryBlock(
                memory=memory, user_id=user, agent_id="support", summarizer_timeout=bad
            )
