"""A conversation whose short-term history outlives the process goes on at its true index.

`Memory.from_defaults(..., async_database_uri="sqlite+aiosqlite:///chat.db")` keeps the chat
history in a file, so after a restart the same session goes on. The block kept how far each
session was recorded in memory only: a new block met the restored history as a new session,
stored the turns the first process had already recorded again (at index 0), and numbered every
later turn from 0 too, so its episodes clashed with the first process's (two at 4-5 with
different text) and the recall's `seen_from` window hid the wrong episodes. A block now
resumes a session it has not seen from what the store holds for it, lined up with the
history it is given.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
FIRST, SECOND = 9, 7  # turns before and after the restart


@pytest.fixture
def episodes(tmp_path: Path) -> Iterator[EpisodicMemory]:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    yield memory
    memory.close()


def _question(n: int) -> str:
    return f"q{n:03d} " + " ".join(["refund"] * 30)


def _answer(n: int) -> str:
    return f"a{n:03d} " + " ".join(["parcel"] * 30)


async def _run(
    block: EpisodicMemoryBlock,
    db: Path,
    turns: range,
    *,
    token_limit: int,
    end_with_flush: bool,
) -> str:
    """One process: a Memory on the chat file, `turns` turns; the last block text it read."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    try:
        chat = Memory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=engine,
            token_limit=token_limit,
            token_flush_size=100,
        )
        read = ""
        for n in turns:
            await chat.aput(ChatMessage(role="user", content=_question(n)))
            # What an agent does before answering; the block's text is in the system message.
            got = await chat.aget()
            read = "\n".join(str(m.content) for m in got if m.role.value == "system")
            await chat.aput(ChatMessage(role="assistant", content=_answer(n)))
        if end_with_flush:
            await block.aflush(chat)
        else:
            await block.recorder.flush()  # a restart: written, but no end of session
        return read
    finally:
        await engine.dispose()


def _active() -> Any:
    from llama_index.core.storage.chat_store.base_db import MessageStatus

    return MessageStatus.ACTIVE


def _stored(items: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Message index -> the first word of each stored text for it."""
    texts: dict[int, list[str]] = {}
    for item in items:
        lines = item["long_summary_text"].split("\n")
        assert len(lines) == item["end_index"] - item["start_index"] + 1
        for offset, line in enumerate(lines):
            texts.setdefault(item["start_index"] + offset, []).append(line.split()[1])
    return texts


@pytest.mark.parametrize("end_with_flush", [True, False], ids=["ended", "restarted"])
@pytest.mark.parametrize(
    ("token_limit", "next_limit"),
    [(400, 400), (30_000, 30_000), (30_000, 400)],
    # "shrunk": the next process's first message flushes recorded ones before any read.
    ids=["flushing", "unflushed", "shrunk"],
)
async def test_a_restored_history_goes_on_at_its_true_index(
    episodes: EpisodicMemory,
    tmp_path: Path,
    token_limit: int,
    next_limit: int,
    *,
    end_with_flush: bool,
) -> None:
    db = tmp_path / "chat.db"
    first = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id=AGENT)
    await _run(first, db, range(FIRST), token_limit=token_limit, end_with_flush=end_with_flush)

    # The next process: the same chat file and session, a new block on the same store.
    second = EpisodicMemoryBlock(
        memory=episodes,
        user_id="u1",
        agent_id=AGENT,
        previous_conversation_limit=0,
        same_conversation_limit=100,
    )
    read = await _run(
        second, db, range(FIRST, FIRST + SECOND), token_limit=next_limit, end_with_flush=True
    )

    items = await episodes.read_recent(1000, user_id="u1", agent_id=AGENT, conversation_id="chat-1")
    expected = {
        i: [_question(i // 2).split()[0] if i % 2 == 0 else _answer(i // 2).split()[0]]
        for i in range(2 * (FIRST + SECOND))
    }
    # Every message once, at its index: nothing stored twice, no range claimed twice.
    assert _stored(items) == expected
    ranges = sorted((e["start_index"], e["end_index"]) for e in items)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges

    # The recall before the last answer leaves out exactly what short-term memory still holds.
    engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    try:
        chat = Memory.from_defaults(
            session_id="chat-1", tokenizer_fn=offline_tokenizer(), async_engine=engine
        )
        active = await chat.aget_all(status=_active())
    finally:
        await engine.dispose()
    in_context = {m.content.split()[0] for m in active if m.content}  # pyright: ignore[reportOptionalMemberAccess]
    recalled = set(re.findall(r"\b[qa]\d{3}\b", read))
    last = FIRST + SECOND - 1
    assert not recalled & (in_context - {f"a{last:03d}"})
    if next_limit == 400:
        # Everything that left short-term memory before the last question is recalled.
        assert recalled, read


async def test_a_new_history_on_a_stored_session_goes_on_after_it(
    episodes: EpisodicMemory, tmp_path: Path
) -> None:
    # The first history is gone (an in-memory Memory, or another one), the session id stays.
    first = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id=AGENT)
    await _run(first, tmp_path / "one.db", range(2), token_limit=30_000, end_with_flush=True)
    second = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id=AGENT)
    history = [
        ChatMessage(role="user", content="q100 a new start"),
        ChatMessage(role="assistant", content="a100 noted"),
        ChatMessage(role="user", content="q101 next"),
    ]
    await second.aget(messages=history, session_id="chat-1")
    await second.aput([ChatMessage(role="user", content="q102 given")], session_id="chat-1")
    await second.recorder.flush()
    items = await episodes.read_recent(100, user_id="u1", agent_id=AGENT, conversation_id="chat-1")
    assert _stored(items) == {
        0: ["q000"],
        1: ["a000"],
        2: ["q001"],
        3: ["a001"],
        4: ["q100"],
        5: ["a100"],
        6: ["q102"],
    }
