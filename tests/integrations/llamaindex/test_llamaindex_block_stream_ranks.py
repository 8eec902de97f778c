"""The memory block and the memory tool recall without stream ranks, unless asked.

Both answer with a `<recalled_episodes>` block, which never shows which streams found an
episode, so their recall skips the id-only stream searches (`Engine.query_explained`) and runs
the fused searches alone (`Engine.query`); `recall_options={"with_stream_ranks": True}` brings
them back. The retriever, whose nodes carry `streams`, keeps them.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    EpisodicRetriever,
    create_memory_search_tool,
)

AGENT = "ranks"


@pytest.fixture
def calls(memory: EpisodicMemory) -> Iterator[Counter[str]]:
    """Counts the engine's fused searches with and without stream ranks, passing each through."""
    engine: Any = memory.store.engine
    counter: Counter[str] = Counter()
    originals = {name: getattr(engine, name) for name in ("query", "query_explained")}
    for name, inner in originals.items():

        def counted(*args: Any, _inner: Any = inner, _name: str = name) -> Any:
            counter[_name] += 1
            return _inner(*args)

        setattr(engine, name, counted)
    yield counter
    for name, inner in originals.items():
        setattr(engine, name, inner)


async def seeded(memory: EpisodicMemory) -> str:
    user = f"ranks-{uuid.uuid4().hex}"
    await memory.memorize(
        short_summary="Refund for the broken kettle, order 1182",
        long_summary="The kettle of order 1182 arrived cracked; it was refunded.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="monday",
    )
    return user


@pytest.mark.parametrize("options", [None, {"with_stream_ranks": True}])
async def test_block(memory: EpisodicMemory, calls: Counter[str], options: Any) -> None:
    user = await seeded(memory)
    extra = {} if options is None else {"recall_options": options}
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, **extra)
    calls.clear()
    text = await block.aget([ChatMessage(role="user", content="kettle refund")], session_id="s")
    assert "order 1182" in text
    assert calls == ({"query": 1} if options is None else {"query_explained": 1})


@pytest.mark.parametrize("options", [None, {"with_stream_ranks": True}])
async def test_tool(memory: EpisodicMemory, calls: Counter[str], options: Any) -> None:
    user = await seeded(memory)
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT, recall_options=options)
    calls.clear()
    assert "order 1182" in str(await tool.acall(query="kettle refund"))
    assert calls == ({"query": 1} if options is None else {"query_explained": 1})


async def test_retriever_keeps_ranks(memory: EpisodicMemory, calls: Counter[str]) -> None:
    user = await seeded(memory)
    calls.clear()
    [node] = await EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT).aretrieve(
        "kettle refund"
    )
    assert node.node.metadata["streams"]["bm25"]["rank"] == 1
    assert calls == {"query_explained": 1}
