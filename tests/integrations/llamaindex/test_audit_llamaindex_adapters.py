"""Trust audit of the LlamaIndex adapter: answers survive unreadable memory, bad settings fail early.

Found by the adapter audit:

- an episode that cannot be read back (a payload written by another program or an older
  version: an out-of-range timestamp, a field of the wrong type) raised out of the memory
  block's `aget` (so out of `agent.run`: the answer was lost), out of the retriever (the query
  engine failed) and out of the memory tool; only episodex's typed errors were caught, and the
  block rendered the recalled episodes outside its `try`. (Since audit 30 the core leaves such
  an episode out of every read, so the block, retriever and tool get the user's other ones.)
- settings that break every recall or record were accepted when the block, retriever or tool
  was made (an id longer than the id rule allows, a negative limit, a bad recall option value,
  a bad token budget): every turn then failed inside memory, was logged as an outage and the
  agent silently ran without memory for good. They now raise `ConfigurationError` at once.
- `aput` given something other than a list of `ChatMessage` raised `AttributeError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import RecordingLLM
from episodex import ConfigurationError, EpisodicMemory, ValidationError
from episodex.plan import Filter, Match, Point
from episodex.testing import HashEmbedder
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    EpisodicRetriever,
    create_memory_search_tool,
    offline_tokenizer,
)
from sqlalchemy.ext.asyncio import AsyncEngine

AGENT = "support"

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


@pytest.fixture
def hashed() -> Iterator[EpisodicMemory]:
    """A fresh in-RAM memory with the deterministic test embedder."""
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield memory
    memory.close()


async def _corrupt(memory: EpisodicMemory, user: str, **fields: Any) -> None:
    """Store one episode of `user`, then rewrite its payload as another program might have."""
    await memory.memorize(
        short_summary="Refund for the broken kettle",
        long_summary="The kettle arrived broken; the refund was issued.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="old",
    )
    hits, _ = memory.engine.scroll("episodes", Filter(must=(Match("user_id", user),)), limit=1)
    (hit,) = hits
    short, long = memory.embedder.embed_documents(
        ["Refund for the broken kettle", "The kettle arrived broken; the refund was issued."]
    )
    memory.engine.upsert(
        "episodes",
        [
            Point(
                id=hit.id,
                dense={"short": short.tolist(), "long": long.tolist()},
                sparse={},
                payload={**hit.payload, **fields},
            )
        ],
    )


# A timestamp no datetime can hold failed reading the episode; a tools list that is a number
# failed rendering it. The core now leaves such an episode out of every read.
UNREADABLE = [{"timestamp_end": 1e300}, {"tools_invoked": 5}]
GOOD = "Kettle refund promised for Monday"


async def _with_a_good_one(memory: EpisodicMemory, user: str, **fields: Any) -> None:
    """An episode that cannot be read back, and one that can, of the same user."""
    await _corrupt(memory, user, **fields)
    await memory.memorize(
        short_summary=GOOD, long_summary="A kettle refund.", user_id=user, agent_id=AGENT,
        conversation_id="good",
    )  # fmt: skip


@pytest.mark.parametrize("fields", UNREADABLE, ids=["timestamp", "tools"])
async def test_an_unreadable_episode_does_not_cost_the_agent_its_answer(
    hashed: EpisodicMemory,
    make_llm: type[RecordingLLM],
    chat_engine: AsyncEngine,
    fields: dict[str, Any],
) -> None:
    await _with_a_good_one(hashed, "u1", **fields)
    block = EpisodicMemoryBlock(memory=hashed, user_id="u1", agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="s1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    llm.reply = "The refund went out on Monday."
    answer = await FunctionAgent(llm=llm, tools=[]).run("kettle refund?", memory=chat)  # pyright: ignore[reportDeprecated]
    assert str(answer) == "The refund went out on Monday."
    # The other episode reached the model; the one that cannot be read back was left out
    # (it once failed the whole recall, so the agent ran without memory).
    assert GOOD in llm.last_input()
    assert "Refund for the broken kettle" not in llm.last_input()
    assert block.stats().recall_failures == 0


@pytest.mark.parametrize("fields", UNREADABLE, ids=["timestamp", "tools"])
async def test_the_retriever_and_the_tool_go_on_without_an_unreadable_episode(
    hashed: EpisodicMemory, fields: dict[str, Any]
) -> None:
    await _with_a_good_one(hashed, "u1", **fields)
    tool = create_memory_search_tool(hashed, user_id="u1", agent_id=AGENT)
    for output in (await tool.acall(query="kettle refund"), tool.call(query="kettle refund")):
        assert GOOD in output.content and "broken kettle" not in output.content
    for retriever in (
        EpisodicRetriever(hashed, user_id="u1", agent_id=AGENT),
        EpisodicRetriever(hashed, user_id="u1", agent_id=AGENT, raise_on_failure=True),
    ):
        for nodes in (
            await retriever.aretrieve("kettle refund"),
            await asyncio.to_thread(retriever.retrieve, "kettle refund"),
        ):
            assert [n.node.get_content().split("\n")[0] for n in nodes] == [GOOD]


def test_settings_that_would_break_every_turn_fail_when_the_block_is_made(
    hashed: EpisodicMemory,
) -> None:
    too_long = "u" * 600
    for bad in (
        {"user_id": too_long},
        {"agent_id": too_long},
        {"conversation_id": too_long},
        {"recall_options": {"rrf_k": 0}},
        {"recall_options": {"bm25_weight": "high"}},
        {"recall_options": {"seen_from": -1}},
    ):
        settings: dict[str, Any] = {"user_id": "u1", "agent_id": AGENT, **bad}
        with pytest.raises(ConfigurationError):
            EpisodicMemoryBlock(memory=hashed, **settings)


def test_settings_that_would_break_every_search_fail_when_the_retriever_or_tool_is_made(
    hashed: EpisodicMemory,
) -> None:
    bads: list[dict[str, Any]] = [
        {"previous_conversation_limit": -1},
        {"same_conversation_limit": "3"},
        {"previous_conversation_limit": True},
        {"recall_options": {"stage1_limit": 0}},
        {"recall_options": {"short_weight": float("nan")}},
    ]
    for bad in bads:
        with pytest.raises(ConfigurationError):
            EpisodicRetriever(hashed, user_id="u1", agent_id=AGENT, **bad)
    for budget in (-5, "x", 2.5):
        with pytest.raises(ConfigurationError, match="max_tokens"):
            create_memory_search_tool(hashed, user_id="u1", agent_id=AGENT, max_tokens=budget)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match="rrf_k"):
        create_memory_search_tool(
            hashed, user_id="u1", agent_id=AGENT, recall_options={"rrf_k": -2}
        )


async def test_aput_refuses_what_is_not_a_list_of_messages(hashed: EpisodicMemory) -> None:
    block = EpisodicMemoryBlock(memory=hashed, user_id="u1", agent_id=AGENT)
    for bad in ("hello", [{"role": "user", "content": "hi"}], None):
        with pytest.raises(ValidationError, match="ChatMessage"):
            await block.aput(bad, session_id="s1")  # pyright: ignore[reportArgumentType]
    assert await hashed.count(user_id="u1", agent_id=AGENT) == 0
    await block.aput([ChatMessage(role="user", content="hi")], session_id="s1")
    assert await hashed.count(user_id="u1", agent_id=AGENT) == 1
