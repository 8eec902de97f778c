"""Every message reaches the store exactly once, whatever LlamaIndex's buffer settings.

Issue 13, defects 1 (nothing recorded with `Memory.from_defaults()` defaults) and 2 (turns lost
between short-term memory and the store when flushed spans were clipped).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    # Slow: long conversations at many flush sizes; `pytest -m "not slow"` leaves it out.
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
WORDS = "refund order parcel invoice address blender kettle courier label warranty".split()


async def _episodes(memory: EpisodicMemory, user: str, conversation: str) -> list[dict[str, Any]]:
    items = await memory.read_recent(
        100_000, user_id=user, agent_id=AGENT, conversation_id=conversation
    )
    return sorted(items, key=lambda e: (e["start_index"], e["metadata"].get("part", 0)))


def _reconstruct(episodes: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Message index -> the texts the store holds for it (split parts joined)."""
    texts: dict[int, list[str]] = {}
    parts: dict[int, list[str]] = {}
    for episode in episodes:
        long = episode["long_summary_text"]
        meta = episode["metadata"]
        if "part" in meta:
            assert episode["start_index"] == episode["end_index"]
            parts.setdefault(episode["start_index"], []).append(long.split("): ", 1)[1])
            if meta["part"] == meta["parts"]:
                pieces = parts.pop(episode["start_index"])
                assert len(pieces) == meta["parts"]
                texts.setdefault(episode["start_index"], []).append("".join(pieces))
            continue
        lines = long.split("\n")
        assert len(lines) == episode["end_index"] - episode["start_index"] + 1
        for offset, line in enumerate(lines):
            texts.setdefault(episode["start_index"] + offset, []).append(line.split(": ", 1)[1])
    assert not parts, f"split messages with missing parts: {sorted(parts)}"
    return texts


async def test_default_memory_records_every_exchange(
    memory: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    """Defect 1: with `Memory.from_defaults()` limits (30,000 tokens) nothing ever flushed."""
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="s1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[])
    llm.reply = "Refund of 59 EUR issued for order 1234."
    await agent.run("My blender from order 1234 arrived broken.", memory=chat)  # pyright: ignore[reportDeprecated]
    llm.reply = "Address updated to 12 Elm Street."
    await agent.run("Ship future orders to 12 Elm Street.", memory=chat)  # pyright: ignore[reportDeprecated]
    # Each exchange is stored once it is complete, with no flush and no forced token limit.
    episodes = await _episodes(memory, user, "s1")
    assert [(e["start_index"], e["end_index"]) for e in episodes] == [(0, 1), (2, 3)]
    assert episodes[0]["long_summary_text"] == (
        "user: My blender from order 1234 arrived broken.\n"
        "assistant: Refund of 59 EUR issued for order 1234."
    )
    assert [e["short_summary_text"] for e in episodes] == [
        "My blender from order 1234 arrived broken.",
        "Ship future orders to 12 Elm Street.",
    ]
    stats = await block.aflush(chat)  # end of session: whatever is left (here nothing)
    assert (stats.pending, stats.recorded) == (0, 2)
    assert len(await _episodes(memory, user, "s1")) == 2
    # Nothing recorded is shown twice: the exchanges are in short-term memory, not recalled.
    llm.reply = "Yes."
    await agent.run("Is my refund for the blender done?", memory=chat)  # pyright: ignore[reportDeprecated]
    assert "<recalled_episodes>" not in llm.last_input()
    assert llm.last_input().count("Refund of 59 EUR issued") == 1


@pytest.mark.parametrize(
    ("token_limit", "flush_size"),
    [(1_000, 200), (4_000, 2_000), (12_000, 1_000), (40_000, 30_000)],
)
async def test_no_message_lost_or_duplicated_for_any_flush_size(
    memory: EpisodicMemory,
    user: str,
    chat_engine: AsyncEngine,
    token_limit: int,
    flush_size: int,
) -> None:
    """Defect 2: 16 long turns, messages longer than any clip limit, every flush size."""
    rng = random.Random(token_limit)
    conversation = f"long-{token_limit}"
    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id=conversation
    )
    chat = Memory.from_defaults(
        session_id=conversation,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
        token_limit=token_limit,
        token_flush_size=flush_size,
    )
    sent: list[str] = []
    for turn in range(16):
        for role in ("user", "assistant"):
            size = rng.choice([12, 80, 400, 1_500])  # words; 1,500 words is ~10,000 characters
            text = f"{role}{turn} " + " ".join(rng.choice(WORDS) for _ in range(size))
            sent.append(text)
            await chat.aput(ChatMessage(role=role, content=text))
            if role == "user":
                await chat.aget()  # what an agent does before answering
    await block.aflush(chat)

    stored = _reconstruct(await _episodes(memory, user, conversation))
    assert sorted(stored) == list(range(len(sent))), "a message is missing from the store"
    for index, text in enumerate(sent):
        assert stored[index] == [text], f"message {index} stored {len(stored[index])} times"
    assert max(len(t) for t in sent) > 4_000  # longer than the old clip limit
    assert block.stats().pending == 0


async def test_store_failures_never_cost_the_answer(
    memory: EpisodicMemory,
    user: str,
    make_llm: Any,
    chat_engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from episodex import EngineUnavailableError

    def down(*args: object, **kwargs: object) -> Any:
        raise EngineUnavailableError("store down")

    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="down",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[])
    with monkeypatch.context() as patch:
        patch.setattr(memory.store, "recall", down)
        patch.setattr(memory.store, "memorize_many", down)
        llm.reply = "First answer."
        assert str(await agent.run("first question", memory=chat)) == "First answer."  # pyright: ignore[reportDeprecated]
        llm.reply = "Second answer."
        assert str(await agent.run("second question", memory=chat)) == "Second answer."  # pyright: ignore[reportDeprecated]
        stats = await block.aflush(chat)
        assert stats.pending == 2 and stats.recall_failures >= 2 and stats.recorded == 0
    stats = await block.aflush(chat)  # the store is back
    assert (stats.pending, stats.recorded) == (0, 2)
    assert [e["short_summary_text"] for e in await _episodes(memory, user, "down")] == [
        "first question",
        "second question",
    ]


async def test_sync_memory_is_accepted(memory: EpisodicMemory, user: str) -> None:
    from episodex import SyncEpisodicMemory

    sync = SyncEpisodicMemory(location=":memory:")
    try:
        block = EpisodicMemoryBlock(memory=sync, user_id=user, agent_id=AGENT)
        assert block.memory is sync.memory
    finally:
        sync.close()
