"""A restored session whose store cannot be read at the first turn is not stored again.

A block meeting a session it has not seen (a new process on a chat history kept in a
database) reads the store to learn how far the session is recorded (stop 31). When that read
failed (the store briefly unreachable at the first turn) the block counted the session from
0: the whole restored history was stored a second time, its episodes claiming the indexes
the first process's hold. The block now leaves such a session unplaced and tries again at the
next turn: messages still in short-term memory wait there, messages leaving it wait in the
block, and `aflush` says (`EngineError`) that it could not record instead of recording twice.
The agent answers all along.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import RecordingLLM
from episodex import EngineError, EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


@pytest.fixture
def engine(tmp_path: Path) -> FailingEngine:
    return FailingEngine(open_engine(path=str(tmp_path / "store")))


@pytest.fixture
def episodes(engine: FailingEngine) -> Iterator[EpisodicMemory]:
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    yield memory
    memory.close()


def _question(n: int) -> str:
    return f"q{n:03d} " + " ".join(["refund"] * 30)


def _answer(n: int) -> str:
    return f"a{n:03d} " + " ".join(["parcel"] * 30)


async def _process(
    episodes: EpisodicMemory,
    engine: FailingEngine,
    db: Path,
    turns: range,
    *,
    unreadable: range = range(0),
    token_limit: int = 30_000,
) -> EpisodicMemoryBlock:
    """One process: a FunctionAgent on the chat file; the store unreadable in `unreadable` turns."""
    block = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id=AGENT)
    chat_engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    try:
        chat = Memory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=chat_engine,
            token_limit=token_limit,
            token_flush_size=100,
        )
        llm = RecordingLLM()
        agent = FunctionAgent(llm=llm, tools=[])
        for n in turns:
            engine.reads = n in unreadable
            llm.reply = _answer(n)
            # The user gets the model's answer whatever the store does.
            assert str(await agent.run(_question(n), memory=chat)) == _answer(n)  # pyright: ignore[reportDeprecated]
        engine.reads = False
        await block.aflush(chat)
    finally:
        await chat_engine.dispose()
    return block


def _stored(items: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Message index -> the first word of each stored text for it."""
    texts: dict[int, list[str]] = {}
    for item in items:
        lines = item["long_summary_text"].split("\n")
        assert len(lines) == item["end_index"] - item["start_index"] + 1
        for offset, line in enumerate(lines):
            texts.setdefault(item["start_index"] + offset, []).append(line.split()[1])
    return texts


async def _assert_each_message_once(episodes: EpisodicMemory, turns: int) -> None:
    items = await episodes.read_recent(1000, user_id="u1", agent_id=AGENT, conversation_id="chat-1")
    assert _stored(items) == {
        i: [_question(i // 2).split()[0] if i % 2 == 0 else _answer(i // 2).split()[0]]
        for i in range(2 * turns)
    }
    ranges = sorted((e["start_index"], e["end_index"]) for e in items)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges


@pytest.mark.parametrize(
    ("token_limit", "unreadable"),
    [(30_000, 2), (400, 2), (400, 6)],
    # "long": new messages leave short-term memory before the store can be read.
    ids=["unflushed", "flushing", "long"],
)
async def test_a_restored_session_unreadable_at_first_is_recorded_once(
    episodes: EpisodicMemory,
    engine: FailingEngine,
    tmp_path: Path,
    token_limit: int,
    unreadable: int,
) -> None:
    db = tmp_path / "chat.db"
    await _process(episodes, engine, db, range(3), token_limit=token_limit)
    # The next process: the store cannot be read for its first turns.
    block = await _process(
        episodes,
        engine,
        db,
        range(3, 11),
        unreadable=range(3, 3 + unreadable),
        token_limit=token_limit,
    )
    await _assert_each_message_once(episodes, 11)
    assert block.stats().pending == 0


async def test_aflush_says_it_could_not_record_a_session_it_cannot_place(
    episodes: EpisodicMemory, engine: FailingEngine, tmp_path: Path
) -> None:
    db = tmp_path / "chat.db"
    await _process(episodes, engine, db, range(2))
    block = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id=AGENT)
    chat_engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    try:
        chat = Memory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=chat_engine,
        )
        llm = RecordingLLM()
        llm.reply = _answer(2)
        engine.reads = True
        agent = FunctionAgent(llm=llm, tools=[])
        answer = await agent.run(_question(2), memory=chat)  # pyright: ignore[reportDeprecated]
        assert str(answer) == _answer(2)
        with pytest.raises(EngineError, match="chat-1"):
            await block.aflush(chat)
        engine.reads = False
        # Nothing was stored on the way; with the store back the session ends recorded once.
        stats = await block.aflush(chat)
    finally:
        await chat_engine.dispose()
    assert stats.pending == 0
    await _assert_each_message_once(episodes, 3)
