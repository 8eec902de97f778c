"""Messages waiting for an unreadable store survive a killed process.

A block meeting a session it has not placed yet (a new process on a chat history kept in a
database) reads the store to learn how far the session is recorded. While the store cannot be
read, messages leaving short-term memory wait in the block (stop 32): they had left `Memory`'s
database already, so they lived in this process only, and a process killed then (a deploy, the
OOM killer) lost them from episodic memory, though the block has a spill file and every other
recorded turn survives a kill. With `spill_path`, they now wait in a file beside it too, and the
next block on it places them with the session: each message stored once, at its index.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

STORED = 3  # turns stored while the store worked
KILLED = 12  # the turn the process is killed after; the store unreadable from STORED
TURNS = 16  # the turns of the whole session

#: One process on a chat kept in a database: turns stored, then (a new block, as after a
#: restart) the store cannot be read while messages leave short-term memory; then SIGKILL.
_FIRST_PROCESS = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from episodex import EpisodicMemory, open_engine
    from episodex.testing import FailingEngine, HashEmbedder
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory
    from llama_index.core.storage.chat_store.base_db import MessageStatus
    from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
    from sqlalchemy.ext.asyncio import create_async_engine

    store, spill, db = sys.argv[1], sys.argv[2], sys.argv[3]
    stored, killed = int(sys.argv[4]), int(sys.argv[5])

    def question(n):
        return f"q{n:03d} " + "refund " * 30

    def answer(n):
        return f"a{n:03d} " + "parcel " * 30

    async def turns(engine, turns):
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        chat = Memory.from_defaults(
            session_id="chat-1", memory_blocks=[block], tokenizer_fn=offline_tokenizer(),
            async_engine=create_async_engine(f"sqlite+aiosqlite:///{db}"),
            token_limit=400, token_flush_size=100,
        )
        for n in turns:
            await chat.aput(ChatMessage(role="user", content=question(n)))
            await chat.aget()  # what an agent does before answering
            await chat.aput(ChatMessage(role="assistant", content=answer(n)))
        return block, chat

    async def main():
        block, chat = await turns(engine, range(stored))
        await block.aflush(chat)
        before = len(await chat.aget_all(status=MessageStatus.ARCHIVED))
        engine.reads = True  # the next process cannot read the store
        block, chat = await turns(engine, range(stored, killed))
        left = len(await chat.aget_all(status=MessageStatus.ARCHIVED)) - before
        print(left, block.stats().pending, flush=True)  # ready: the messages have left
        os.kill(os.getpid(), signal.SIGKILL)  # no aclose, no atexit: a killed process

    engine = FailingEngine(open_engine(path=store))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    asyncio.run(main())
    """
)


def _question(n: int) -> str:
    return f"q{n:03d} " + "refund " * 30


def _answer(n: int) -> str:
    return f"a{n:03d} " + "parcel " * 30


def _stored(items: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Message index -> the first word of each stored text for it."""
    texts: dict[int, list[str]] = {}
    for item in items:
        lines = item["long_summary_text"].split("\n")
        assert len(lines) == item["end_index"] - item["start_index"] + 1
        for offset, line in enumerate(lines):
            texts.setdefault(item["start_index"] + offset, []).append(line.split()[1])
    return texts


@pytest.mark.parametrize("unreadable", [0, 2], ids=["store-back", "still-unreadable"])
async def test_messages_waiting_for_an_unreadable_store_survive_a_kill(
    tmp_path: Path, unreadable: int
) -> None:
    store, spill, db = tmp_path / "store", tmp_path / "pending.jsonl", tmp_path / "chat.db"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            _FIRST_PROCESS,
            *map(str, (store, spill, db, STORED, KILLED)),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    left, pending = map(int, child.stdout.split())
    # Messages of the outage had left short-term memory (and its database), none recorded.
    assert (left > 4, pending) == (True, 0)

    # The next process: the session goes on; the store is back (after `unreadable` turns).
    engine = FailingEngine(open_engine(path=str(store)))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    chat_engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    try:
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        chat = Memory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=chat_engine,
            token_limit=400,
            token_flush_size=100,
        )
        for n in range(KILLED, TURNS):
            engine.reads = n < KILLED + unreadable
            await chat.aput(ChatMessage(role="user", content=_question(n)))
            await chat.aget()
            await chat.aput(ChatMessage(role="assistant", content=_answer(n)))
        stats = await block.aflush(chat)
        assert stats.pending == 0
        items = await memory.read_recent(
            1000, user_id="u1", agent_id="support", conversation_id="chat-1"
        )
    finally:
        await chat_engine.dispose()
        memory.close()
    # Every message exactly once, at its index: none lost, none twice, no gap.
    assert _stored(items) == {
        i: [_question(i // 2).split()[0] if i % 2 == 0 else _answer(i // 2).split()[0]]
        for i in range(2 * TURNS)
    }
    # Nothing is left waiting beside the spill file (its lock files may stay).
    assert [
        p.name
        for p in tmp_path.iterdir()
        if p.name.startswith(spill.name) and not p.name.endswith(".lock")
    ] == []


def _held_message(index: int) -> ChatMessage:
    """Message `index` of a session whose user asks in two messages, of varied lengths."""
    n, kind = divmod(index, 3)
    if kind == 2:
        return ChatMessage(role="assistant", content=f"a{n:03d} " + "parcel " * 30)
    words = 300 if kind == 1 and n % 5 == 4 else 3 + 11 * n % 40  # now and then a long one
    return ChatMessage(role="user", content=f"q{n:03d}{'ab'[kind]} " + "refund " * words)


#: A placed session whose user asks in two messages, the second now and then a long one:
#: `Memory` then flushes up to it (short-term memory must start with a user message), so the
#: first waits in the block for its answer. The process is killed at the first such flush.
_HELD_PROCESS = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from episodex import EpisodicMemory, open_engine
    from episodex.testing import HashEmbedder
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory
    from llama_index.core.storage.chat_store.base_db import MessageStatus
    from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
    from sqlalchemy.ext.asyncio import create_async_engine

    store, spill, db, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

    def message(index):
        n, kind = divmod(index, 3)
        if kind == 2:
            return ChatMessage(role="assistant", content=f"a{n:03d} " + "parcel " * 30)
        words = 300 if kind == 1 and n % 5 == 4 else 3 + 11 * n % 40
        text = f"q{n:03d}{'ab'[kind]} " + "refund " * words
        return ChatMessage(role="user", content=text)

    async def main():
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        chat = Memory.from_defaults(
            session_id="chat-1", memory_blocks=[block], tokenizer_fn=offline_tokenizer(),
            async_engine=create_async_engine(f"sqlite+aiosqlite:///{db}"),
            token_limit=400, token_flush_size=100,
        )
        for index in range(limit):
            if index % 3 == 2:
                await chat.aget()  # what an agent does before answering
            await chat.aput(message(index))
            archived = await chat.aget_all(status=MessageStatus.ARCHIVED)
            if index % 3 != 2 and len(archived) > index // 3 * 3:
                # A question flushed, its answer not given yet: killed now.
                print(index + 1, len(archived), block.stats().pending, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        print("never held", flush=True)

    memory = EpisodicMemory(engine=open_engine(path=store), embedder=HashEmbedder(), splade=False)
    asyncio.run(main())
    """
)


async def test_a_flushed_question_waiting_for_its_answer_survives_a_kill(tmp_path: Path) -> None:
    store, spill, db = tmp_path / "store", tmp_path / "pending.jsonl", tmp_path / "chat.db"
    child = subprocess.run(
        [sys.executable, "-c", _HELD_PROCESS, *map(str, (store, spill, db, 3 * TURNS))],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)
    put, archived, pending = map(int, child.stdout.split())
    # The question before the last one had left short-term memory (and its database).
    assert (put % 3, archived, pending) == (2, put - 1, 0)

    # The next process: the session goes on from the chat database, three more turns, ends.
    memory = EpisodicMemory(
        engine=open_engine(path=str(store)), embedder=HashEmbedder(), splade=False
    )
    chat_engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    end = 3 * (put // 3 + 4)
    try:
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        chat = Memory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=chat_engine,
            token_limit=400,
            token_flush_size=100,
        )
        for index in range(put, end):
            if index % 3 == 2:
                await chat.aget()
            await chat.aput(_held_message(index))
        assert (await block.aflush(chat)).pending == 0
        items = await memory.read_recent(
            1000, user_id="u1", agent_id="support", conversation_id="chat-1"
        )
    finally:
        await chat_engine.dispose()
        memory.close()
    # Every message exactly once, at its index: the question held at the kill too.
    assert _stored(items) == {
        index: [str(_held_message(index).content).split()[0]] for index in range(end)
    }
    assert [
        p.name
        for p in tmp_path.iterdir()
        if p.name.startswith(spill.name) and not p.name.endswith(".lock")
    ] == []


async def test_waiting_messages_of_a_session_not_gone_on_with_are_recorded_by_its_aflush(
    tmp_path: Path,
) -> None:
    """The way the `spill_path` docstring gives to record a session no one goes on with."""
    store, spill, db = tmp_path / "store", tmp_path / "pending.jsonl", tmp_path / "chat.db"
    child = subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS, *map(str, (store, spill, db, STORED, KILLED))],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    memory = EpisodicMemory(
        engine=open_engine(path=str(store)), embedder=HashEmbedder(), splade=False
    )
    chat_engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    try:
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        chat = Memory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=chat_engine,
            token_limit=400,
            token_flush_size=100,
        )
        assert (await block.aflush(chat)).pending == 0  # no new turn: only the flush
        items = await memory.read_recent(
            1000, user_id="u1", agent_id="support", conversation_id="chat-1"
        )
    finally:
        await chat_engine.dispose()
        memory.close()
    assert _stored(items) == {
        i: [_question(i // 2).split()[0] if i % 2 == 0 else _answer(i // 2).split()[0]]
        for i in range(2 * KILLED)
    }
    assert not (tmp_path / (spill.name + ".waiting.json")).exists()
