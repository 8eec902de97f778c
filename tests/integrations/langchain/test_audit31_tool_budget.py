"""A memory tool whose budget fits no episode says so, instead of "no episode matches".

`create_memory_search_tool(..., max_tokens=N)` answered "No earlier episodes match this
search." when episodes did match but none fitted in N tokens: the model answered as if memory
held nothing about it, and nothing told the developer the budget was the cause.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from episodex import EpisodicMemory
from langchain_episodex import create_memory_search_tool

AGENT = "concierge"
NOTHING_FOUND = "No earlier episodes match this search."


@pytest.fixture(scope="module")
def user(memory: EpisodicMemory) -> str:
    user = f"user-{uuid.uuid4().hex[:8]}"
    asyncio.run(
        memory.memorize(
            short_summary="The guest's favourite hotel in Rome is Hotel Artemide.",
            long_summary="user: which hotel did I like in Rome? assistant: Hotel Artemide.",
            user_id=user,
            agent_id=AGENT,
            conversation_id="earlier",
        )
    )
    return user


@pytest.mark.parametrize("max_tokens", [0, 3])
async def test_episodes_that_match_but_do_not_fit_are_not_called_no_match(
    memory: EpisodicMemory, user: str, max_tokens: int
) -> None:
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT, max_tokens=max_tokens)
    for answer in (
        tool.invoke({"query": "favourite hotel in Rome"}),
        await tool.ainvoke({"query": "favourite hotel in Rome"}),
    ):
        assert answer != NOTHING_FOUND
        assert "1 earlier episode(s) match" in answer and f"max_tokens={max_tokens}" in answer
        assert "Artemide" not in answer


async def test_no_match_and_a_fitting_budget_answer_as_before(
    memory: EpisodicMemory, user: str
) -> None:
    roomy = create_memory_search_tool(memory, user_id=user, agent_id=AGENT, max_tokens=500)
    assert "Artemide" in await roomy.ainvoke({"query": "favourite hotel in Rome"})
    stranger = create_memory_search_tool(
        memory, user_id=f"{user}-nobody", agent_id=AGENT, max_tokens=3
    )
    assert await stranger.ainvoke({"query": "favourite hotel in Rome"}) == NOTHING_FOUND
