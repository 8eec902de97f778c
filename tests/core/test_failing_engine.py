"""`episodex.testing.FailingEngine`: a real engine whose reads or writes fail on demand."""

from __future__ import annotations

import pytest
from episodex import EngineUnavailableError, EpisodicMemory, ValidationError, open_engine
from episodex.testing import FailingEngine, HashEmbedder


async def _remember(mem: EpisodicMemory, text: str = "refund for order 7") -> None:
    await mem.memorize(
        short_summary=text,
        long_summary=f"the user said: {text}",
        user_id="u",
        agent_id="a",
        conversation_id="c",
    )


async def test_reads_and_writes_fail_while_set_and_leave_the_store_as_it_was() -> None:
    failing = FailingEngine(open_engine(location=":memory:"))
    mem = EpisodicMemory(engine=failing, embedder=HashEmbedder(), splade=False)
    try:
        await _remember(mem)

        failing.writes = True
        with pytest.raises(EngineUnavailableError):
            await _remember(mem, "never stored")
        assert await mem.count(user_id="u", agent_id="a") == 1  # reads still answer

        failing.reads = True
        with pytest.raises(EngineUnavailableError):
            await mem.recall(user_id="u", agent_id="a", query="refund")
        with pytest.raises(EngineUnavailableError):
            await mem.count(user_id="u", agent_id="a")
        assert failing.failures == 3

        failing.reads = failing.writes = False
        res = await mem.recall(user_id="u", agent_id="a", query="refund")
        assert [i["short_summary_text"] for i in res["previous_conversations"]] == [
            "refund for order 7"
        ]
    finally:
        mem.close()


async def test_a_chosen_error_is_raised_instead() -> None:
    failing = FailingEngine(
        open_engine(location=":memory:"), reads=True, error=ValidationError("injected")
    )
    mem = EpisodicMemory(engine=failing, embedder=HashEmbedder(), splade=False)
    try:
        with pytest.raises(ValidationError, match="injected"):
            await mem.recall(user_id="u", agent_id="a", query="refund")
        await _remember(mem)  # writes were never set to fail
        failing.reads = False
        assert await mem.count(user_id="u", agent_id="a") == 1
    finally:
        mem.close()
