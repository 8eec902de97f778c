"""Tabs of one LlamaIndex session that all begin with the same greeting store each message once.

Two or three browser tabs of one chat hold a `Memory` each under one session id and share one
`EpisodicMemoryBlock`, which tells their histories apart by the recorded messages each began
with. Tabs beginning with the same greeting defeated that: a tab whose history began with the
current tab's recorded greeting was taken for the current tab, and its own messages after
the greeting, recorded already, were stored a second time; and a tab coming back while a new
tab's greeting waited unrecorded was taken for the new tab, and its whole history was stored
again. A history now goes on from the one the block last read only if it also goes on with
the message that read left unrecorded, and a remembered tab whose recorded messages and then
that message the history begins with wins over a shorter match.
"""

from __future__ import annotations

from collections import Counter

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
GREETING = ("user: hello there", "assistant: hi, how can I help?")


def _memory(session: str, block: EpisodicMemoryBlock, engine: AsyncEngine) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=engine,
    )


async def _stored(memory: EpisodicMemory, user: str, session: str) -> Counter[str]:
    """How often each message line is stored; fails if an index is stored twice."""
    items = await memory.read_recent(1000, user_id=user, agent_id=AGENT, conversation_id=session)
    indexes: set[int] = set()
    lines: Counter[str] = Counter()
    for item in items:
        text = str(item["long_summary_text"]).split("\n")
        assert len(text) == item["end_index"] - item["start_index"] + 1
        for offset, line in enumerate(text):
            assert item["start_index"] + offset not in indexes, "an index stored twice"
            indexes.add(item["start_index"] + offset)
            lines[line] += 1
    return lines


class _Tabs:
    """Tabs of one session sharing a block; each turn is asked, read, then answered."""

    def __init__(self, block: EpisodicMemoryBlock, session: str, names: str) -> None:
        self.engines = [create_async_engine("sqlite+aiosqlite:///:memory:") for _ in names]
        self.chats = {
            name: _memory(session, block, engine)
            for name, engine in zip(names, self.engines, strict=True)
        }
        self.turns = dict.fromkeys(names, 0)
        self.said: list[str] = []

    async def ask(self, name: str) -> None:
        n = self.turns[name]
        text = "hello there" if n == 0 else f"question {n} from tab {name} about the parcel"
        await self.chats[name].aput(ChatMessage(role="user", content=text))
        await self.chats[name].aget()  # what an agent does before answering
        self.said.append(f"user: {text}")

    async def answer(self, name: str) -> None:
        n = self.turns[name]
        self.turns[name] += 1
        text = "hi, how can I help?" if n == 0 else f"answer {n} to tab {name}: it left today"
        await self.chats[name].aput(ChatMessage(role="assistant", content=text))
        self.said.append(f"assistant: {text}")

    async def turn(self, name: str) -> None:
        await self.ask(name)
        await self.answer(name)

    async def close(self, block: EpisodicMemoryBlock) -> None:
        for chat in self.chats.values():
            await block.aflush(chat)
        for engine in self.engines:
            await engine.dispose()


def _check(stored: Counter[str], said: list[str], tabs: int) -> None:
    """Every message stored once; the greeting, the same in every tab, at least once."""
    expected = Counter(said)
    for line in GREETING:
        assert 1 <= stored[line] <= tabs, stored
        stored[line] = expected[line] = 0
    assert stored == expected


async def test_two_tabs_that_begin_with_the_same_greeting_store_each_message_once(
    memory: EpisodicMemory, user: str
) -> None:
    session = "chat-same-greeting"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    tabs = _Tabs(block, session, "ab")
    try:
        # Both tabs greet; tab a goes on alone for a while, then tab b, then tab a again.
        await tabs.ask("a")
        await tabs.ask("b")
        await tabs.answer("b")
        await tabs.answer("a")
        for _ in range(3):
            await tabs.turn("a")
        await tabs.turn("b")
        await tabs.turn("a")
        await tabs.turn("b")
    finally:
        await tabs.close(block)

    _check(await _stored(memory, user, session), tabs.said, 2)
    assert block.stats().pending == 0


async def test_a_new_tab_beginning_like_a_remembered_one_is_not_taken_for_it(
    memory: EpisodicMemory, user: str
) -> None:
    session = "chat-new-tab-alike"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    tabs = _Tabs(block, session, "abc")
    try:
        for name in "ab":
            await tabs.turn(name)
            await tabs.turn(name)
        # Tab c greets while tab a waits for its answer, then asks its own question.
        await tabs.ask("a")
        await tabs.turn("b")
        await tabs.ask("c")
        await tabs.answer("c")
        await tabs.turn("b")
        await tabs.turn("c")
        await tabs.answer("a")
        await tabs.turn("a")
        await tabs.turn("c")
        await tabs.turn("b")
        await tabs.turn("a")
    finally:
        await tabs.close(block)

    _check(await _stored(memory, user, session), tabs.said, 3)
    assert block.stats().pending == 0
