"""The LlamaIndex memory tool says when episodes match but none fits its budget.

It answered "No remembered episode matches that query." when episodes did match but none
fitted in `max_tokens`: the model answered as if memory held nothing about it.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory
from llama_index.memory.episodex import create_memory_search_tool

AGENT = "support"


@pytest.mark.parametrize("max_tokens", [0, 3])
async def test_episodes_that_match_but_do_not_fit_are_not_called_no_match(
    memory: EpisodicMemory, user: str, max_tokens: int
) -> None:
    await memory.memorize(
        short_summary="Refund for broken kettle, order 1182",
        long_summary="The kettle of order 1182 arrived cracked; it was refunded.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="monday",
    )
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT, max_tokens=max_tokens)
    for answer in (str(await tool.acall(query="kettle refund")), str(tool.call(query="kettle"))):
        assert "No remembered episode" not in answer
        assert "1 remembered episode(s) match" in answer and f"max_tokens={max_tokens}" in answer
        assert "1182" not in answer
    roomy = create_memory_search_tool(memory, user_id=user, agent_id=AGENT, max_tokens=500)
    assert "1182" in str(await roomy.acall(query="kettle refund"))
    stranger = create_memory_search_tool(memory, user_id=f"{user}-x", agent_id=AGENT, max_tokens=3)
    assert "No remembered episode" in str(await stranger.acall(query="kettle refund"))
