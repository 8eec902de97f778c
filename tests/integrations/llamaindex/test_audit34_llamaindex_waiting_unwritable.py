"""A waiting file that cannot be written is written again, and `aflush` says so.

Messages that left `Memory` unrecorded (a flushed question whose answer is still in
short-term memory) wait in `<spill>.waiting.json`, so a killed process loses none. When that
file could not be written, the block only logged a warning: the messages waited in the
process alone, no later call of another session wrote them, and `aflush` reported success.
A kill then lost them with nobody told. Now the failure is logged as an error, every later
call of the block (of any session) writes the file again, and `aflush` raises `EngineError`
while it cannot be written; the agent's turn itself still goes on.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from episodex import EngineError, EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
QUESTION = "Where is my parcel 7788?"


def _exchange() -> list[ChatMessage]:
    return [ChatMessage(role="user", content="Hello"), ChatMessage(role="assistant", content="Hi")]


def _waiting(path: Path) -> dict[str, list[str]]:
    entries = json.loads(path.read_bytes())["sessions"]
    return {e["conversation_id"]: [m["blocks"][0]["text"] for m in e["messages"]] for e in entries}


async def test_an_unwritten_waiting_file_is_written_at_the_next_call_of_any_session(
    memory: EpisodicMemory,
    user: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    chat_engine: AsyncEngine,
) -> None:
    spill = tmp_path / "pending.jsonl"
    waiting = tmp_path / "pending.jsonl.waiting.json"
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, spill_path=spill)
    for session in ("chat-1", "chat-2"):
        await block.aput(_exchange(), session_id=session)
    # Both sessions placed (their entries read), the file can no longer be written: its path
    # is a folder.
    waiting.mkdir()
    with caplog.at_level(logging.ERROR):
        # The call itself goes on: the agent's turn is not failed by memory.
        await block.aput(
            [ChatMessage(role="user", content=QUESTION)],
            from_short_term_memory=True,
            session_id="chat-1",
        )
    assert "a killed process loses them" in caplog.text
    memory_of_2 = Memory.from_defaults(
        session_id="chat-2",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    # While it still cannot be written, aflush (of any session) says so.
    with pytest.raises(EngineError, match="chat-1"):
        await block.aflush(memory_of_2)
    waiting.rmdir()
    # Another session's call writes chat-1's waiting question, which chat-1 never calls again.
    await block.aput(_exchange(), session_id="chat-2")
    assert _waiting(waiting) == {"chat-1": [QUESTION]}
    assert (await block.aflush(memory_of_2)).pending == 0
