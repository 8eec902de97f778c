"""A damaged `<spill>.waiting.json` is set aside, never overwritten.

The waiting file holds messages that have left `Memory` unrecorded. One that could not be
parsed (damaged by a disk or a hand edit) was logged and read as empty, and the block's next
save replaced it: every message waiting in it was lost for good. An entry of another shape
was dropped the same way at the next save, and one unreadable message made the whole session
unplaceable (its load raised at every turn). Now what cannot be read is moved to
`<name>.torn` and logged; every readable entry and message is kept and recorded.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


def _entry(user: str, session: str, *texts: str) -> dict[str, Any]:
    return {
        "user_id": user,
        "agent_id": AGENT,
        "conversation_id": session,
        "messages": [
            ChatMessage(role="user" if i % 2 == 0 else "assistant", content=t).model_dump(
                mode="json"
            )
            for i, t in enumerate(texts)
        ],
    }


async def _hold_a_question(block: EpisodicMemoryBlock, session: str) -> None:
    """A flushed question whose answer is still in short-term memory: saved to the file."""
    await block.aput(
        [ChatMessage(role="user", content="Where is my parcel?")],
        from_short_term_memory=True,
        session_id=session,
    )


async def test_an_unparseable_waiting_file_is_moved_aside_not_overwritten(
    memory: EpisodicMemory, user: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spill = tmp_path / "pending.jsonl"
    waiting = tmp_path / "pending.jsonl.waiting.json"
    whole = json.dumps({"sessions": [_entry(user, "chat-2", "Refund order 1234.")]}).encode()
    damaged = whole[: len(whole) // 2]
    waiting.write_bytes(damaged)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, spill_path=spill)
    with caplog.at_level(logging.ERROR):
        await _hold_a_question(block, "chat-1")
    await block.recorder.flush()
    torn = tmp_path / "pending.jsonl.waiting.json.torn"
    assert torn.read_bytes() == damaged + b"\n"
    assert str(torn) in caplog.text
    entries = json.loads(waiting.read_bytes())["sessions"]
    assert [(e["conversation_id"], len(e["messages"])) for e in entries] == [("chat-1", 1)]


async def test_a_partly_readable_waiting_file_keeps_every_readable_entry_and_message(
    memory: EpisodicMemory, user: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spill = tmp_path / "pending.jsonl"
    waiting = tmp_path / "pending.jsonl.waiting.json"
    other = _entry(user, "chat-2", "Refund order 1234.")
    shapeless = {"user_id": user, "agent_id": AGENT, "messages": "not a list"}
    bad_message = {"role": "nobody", "blocks": 7}
    mixed = _entry(user, "chat-3", "Ship to 12 Elm Street.", "Address updated.")
    mixed["messages"].insert(1, bad_message)
    waiting.write_text(json.dumps({"sessions": [other, shapeless, mixed]}))
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, spill_path=spill)
    with caplog.at_level(logging.ERROR):
        await _hold_a_question(block, "chat-1")
        # The readable messages waiting for chat-3 are placed and recorded with it.
        await block.aput([ChatMessage(role="user", content="Thanks!")], session_id="chat-3")
    await block.recorder.flush()
    torn = tmp_path / "pending.jsonl.waiting.json.torn"
    set_aside = [json.loads(line) for line in torn.read_text().splitlines()]
    assert shapeless in set_aside
    assert {**mixed, "messages": [bad_message]} in set_aside
    assert str(torn) in caplog.text
    entries = json.loads(waiting.read_bytes())["sessions"]
    assert sorted((e["conversation_id"], len(e["messages"])) for e in entries) == [
        ("chat-1", 1),
        ("chat-2", 1),
    ]
    stored = await memory.read_recent(100, user_id=user, agent_id=AGENT, conversation_id="chat-3")
    lines = [line for e in stored for line in e["long_summary_text"].split("\n")]
    assert sorted(lines) == [
        "assistant: Address updated.",
        "user: Ship to 12 Elm Street.",
        "user: Thanks!",
    ]
