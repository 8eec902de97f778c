"""Both adapters record an exchange by the core's one span rule and take the same recall options."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, RecallOptions, span_episodes
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_episodex import (
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
    EpisodicRetriever,
    arecord_exchange,
    create_memory_search_tool,
    recall_episodes,
)
from lc_fakes import EchoChatModel
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.memory.episodex import EpisodicMemoryBlock
from llama_index.memory.episodex import EpisodicRetriever as LlamaRetriever

AGENT = "both"
QUESTION = "Find me a hotel in Rome near the Pantheon."
ANSWER = "Hotel Albergo del Senato is two minutes from the Pantheon."


async def _stored(memory: EpisodicMemory, user: str) -> list[tuple[str, str]]:
    items = await memory.read_recent(10, user_id=user, agent_id=AGENT)
    items.sort(key=lambda item: item["start_index"])
    return [(item["short_summary_text"], item["long_summary_text"]) for item in items]


async def test_one_exchange_becomes_the_same_episode_in_both_adapters(
    memory: EpisodicMemory,
) -> None:
    lc_user, li_user = f"lc-{uuid.uuid4().hex}", f"li-{uuid.uuid4().hex}"
    await arecord_exchange(
        memory,
        QUESTION,
        ANSWER,
        user_id=lc_user,
        agent_id=AGENT,
        conversation_id="c1",
        tools_invoked=["hotels"],
    )
    block = EpisodicMemoryBlock(memory=memory, user_id=li_user, agent_id=AGENT)
    await block.aput(
        [
            ChatMessage(role=MessageRole.USER, content=QUESTION),
            ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    TextBlock(text=ANSWER),
                    ToolCallBlock(tool_call_id="t1", tool_name="hotels", tool_kwargs={}),
                ],
            ),
        ],
        session_id="c1",
    )
    expected = span_episodes([("user", QUESTION), ("assistant", f"{ANSWER}\n[called hotels]")])
    want = [(e.short_summary, e.long_summary) for e in expected]
    assert await _stored(memory, lc_user) == want
    assert await _stored(memory, li_user) == want


async def test_a_long_agent_run_is_split_never_truncated(memory: EpisodicMemory) -> None:
    user = f"long-{uuid.uuid4().hex}"
    words = [f"w{i:05d}" for i in range(2500)]  # about 15,000 characters in one message

    def answer(messages: list[BaseMessage]) -> BaseMessage:
        return AIMessage("Summary noted.")

    agent = create_agent(
        EchoChatModel(answer=answer),
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT, user_id=user)],
    )
    await agent.ainvoke({"messages": [HumanMessage(" ".join(words))]})
    stored = await memory.read_recent(20, user_id=user, agent_id=AGENT)
    stored.sort(key=lambda item: (item["start_index"], item["metadata"].get("part", 0)))
    assert len(stored) >= 4
    assert all(len(item["long_summary_text"]) <= 4000 for item in stored)
    text = " ".join(item["long_summary_text"] for item in stored)
    assert [w for w in text.split() if w.startswith("w") and w[1:].isdigit()] == words
    assert stored[-1]["long_summary_text"] == "assistant: Summary noted."


Build = Callable[[dict[str, Any]], object]


def _builders(memory: EpisodicMemory) -> dict[str, Build]:
    return {
        "langchain EpisodicRetriever": lambda o: EpisodicRetriever(
            memory=memory, user_id="u", agent_id=AGENT, recall_options=o
        ),
        "langchain EpisodicConversationMemory": lambda o: EpisodicConversationMemory(
            memory=memory, user_id="u", agent_id=AGENT, recall_options=o
        ),
        "langchain EpisodicMemoryMiddleware": lambda o: EpisodicMemoryMiddleware(
            memory, agent_id=AGENT, recall_options=o
        ),
        "langchain recall_episodes": lambda o: recall_episodes(memory, recall_options=o),
        "langchain create_memory_search_tool": lambda o: create_memory_search_tool(
            memory, recall_options=o
        ),
        "llama-index EpisodicMemoryBlock": lambda o: EpisodicMemoryBlock(
            memory=memory, user_id="u", agent_id=AGENT, recall_options=o
        ),
        "llama-index EpisodicRetriever": lambda o: LlamaRetriever(
            memory, user_id="u", agent_id=AGENT, recall_options=o
        ),
    }


def test_every_adapter_takes_exactly_the_core_recall_options(memory: EpisodicMemory) -> None:
    every: RecallOptions = {
        "previous_conversation_limit": 3,
        "same_conversation_limit": 2,
        "short_weight": 0.2,
        "long_weight": 0.2,
        "bm25_weight": 0.3,
        "splade_weight": 0.3,
        "splade_short_weight": 0.1,
        "dated_weight": 0.2,
        "speaker_weight": 0.2,
        "speaker_bm25_weight": 0.1,
        "conversation_diversity": 0.03,
        "stage1_limit": 50,
        "rrf_k": 10,
        "seen_from": 0,
        "seen_until": 4,
        "seen_metadata": {"thread_id": "t1"},
        "with_stream_ranks": False,
    }
    assert set(every) == RecallOptions.__optional_keys__
    for name, build in _builders(memory).items():
        assert build(dict(every)) is not None, name
        with pytest.raises(ConfigurationError, match="unknown recall option"):
            build({"top_k": 3})
