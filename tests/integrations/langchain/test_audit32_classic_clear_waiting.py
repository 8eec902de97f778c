"""`clear` forgets the exchanges still waiting to be written too, not only the stored ones.

`EpisodicConversationMemory.aclear` wrote the waiting exchanges first, then forgot the
conversation. When the store took deletes but not writes (a nearly full disk: the embedded
store refuses to grow but still deletes), the flush left them waiting, the forget found nothing
stored, and `clear` returned as done; once the store took writes again, the recorder stored the
cleared exchanges and the conversation came back (from the spill file, in the next process too).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from episodex import (
    EngineUnavailableError,
    EpisodicMemory,
    StorageFullError,
    ValidationError,
    open_engine,
)
from episodex.plan import Point
from episodex.testing import FailingEngine, HashEmbedder
from langchain_episodex import EpisodicConversationMemory


class _NoRoom(FailingEngine):
    """Refuses to store points while `full` is set, as a nearly full disk does; deletes work."""

    __test__ = False

    full = False

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        if self.full:
            raise StorageFullError("too little free disk to write (FailingEngine)")
        super().upsert(collection, points)


def _chain_memory(
    memory: EpisodicMemory, conversation: str, spill: Path | None
) -> EpisodicConversationMemory:
    return EpisodicConversationMemory(
        memory=memory,
        user_id="u1",
        agent_id="support",
        conversation_id=conversation,
        spill_path=spill,
    )


async def _cleared_while_full(tmp_path: Path, spill: Path | None) -> None:
    engine = _NoRoom(open_engine(path=str(tmp_path / "store")))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        kept = _chain_memory(memory, "kept", spill)
        cleared = _chain_memory(memory, "cleared", spill)
        await cleared.asave_context({"input": "my card is 4111"}, {"output": "noted"})
        engine.full = True
        await cleared.asave_context({"input": "and my pin is 1234"}, {"output": "noted too"})
        await kept.asave_context({"input": "where is my parcel?"}, {"output": "in transit"})
        # Its own waiting exchange; with a shared spill file, the other conversation's too.
        assert cleared.stats().pending == (1 if spill is None else 2)

        await cleared.aclear()
        assert await memory.count(user_id="u1", agent_id="support", conversation_id="cleared") == 0

        engine.full = False
        await cleared.aflush()
        await kept.aflush()
        # The cleared exchange stays forgotten; the other conversation's waiting one is stored.
        assert await memory.count(user_id="u1", agent_id="support", conversation_id="cleared") == 0
        assert await memory.count(user_id="u1", agent_id="support", conversation_id="kept") == 1
        assert cleared.stats().pending == 0
        assert kept.stats().pending == 0
    finally:
        memory.close()


async def test_a_cleared_conversation_waiting_in_memory_does_not_come_back(tmp_path: Path) -> None:
    await _cleared_while_full(tmp_path, None)


async def test_a_cleared_conversation_waiting_in_the_spill_file_does_not_come_back(
    tmp_path: Path,
) -> None:
    await _cleared_while_full(tmp_path, tmp_path / "pending.jsonl")


async def test_a_clear_the_store_fails_forgets_nothing(tmp_path: Path) -> None:
    engine = _NoRoom(open_engine(path=str(tmp_path / "store")))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        cleared = _chain_memory(memory, "cleared", tmp_path / "pending.jsonl")
        await cleared.asave_context({"input": "my card is 4111"}, {"output": "noted"})
        engine.full = True
        await cleared.asave_context({"input": "and my pin is 1234"}, {"output": "noted too"})
        engine.writes = True  # down: deletes fail too
        with pytest.raises(EngineUnavailableError):
            await cleared.aclear()
        assert cleared.stats().pending == 1  # still waiting, as the stored one is still stored
        engine.writes = engine.full = False
        assert await cleared.aflush() == 0
        assert await memory.count(user_id="u1", agent_id="support", conversation_id="cleared") == 2
    finally:
        memory.close()


async def test_the_recorder_refuses_bad_ids_and_keeps_everything(tmp_path: Path) -> None:
    engine = _NoRoom(open_engine(path=str(tmp_path / "store")), writes=False)
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        cleared = _chain_memory(memory, "cleared", None)
        engine.full = True
        await cleared.asave_context({"input": "my card is 4111"}, {"output": "noted"})
        for bad in ("", 7, None):
            with pytest.raises(ValidationError):
                await cleared.recorder.forget(user_id=bad, agent_id="support")  # pyright: ignore[reportArgumentType]
        with pytest.raises(ValidationError):
            await cleared.recorder.forget(user_id="u1", agent_id="support", conversation_id="")
        assert cleared.stats().pending == 1
        # Another user's forget leaves this user's waiting exchange alone.
        assert await cleared.recorder.forget(user_id="u2", agent_id="support") == 0
        assert cleared.stats().pending == 1
        assert await cleared.recorder.forget(user_id="u1", agent_id="support") == 1
        assert cleared.stats().pending == 0
    finally:
        memory.close()
