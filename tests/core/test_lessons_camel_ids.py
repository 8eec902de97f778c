"""Numeric ids of the original camelCase schema never make two tenants' steps collide.

The original schema numbered steps per database (`"id": 1, 2, ...`), so two users', agents',
sessions' or runs' exports hold the same numbers. The UUID a number becomes used to depend on
the number alone: the second user's import of their own file was refused ("already belongs
to another user"), and a second run of the same session silently replaced the first one's
step. Each step now keeps its own point, and importing the same file again still replaces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from episodex import EpisodicMemory, StepLessonMemory, import_memories
from episodex.testing import HashEmbedder


def _record(user: str, session: str, run: str, state: str) -> dict[str, Any]:
    return {
        "id": 1,
        "stepId": "s1",
        "userId": user,
        "agentId": "web",
        "sessionId": session,
        "runId": run,
        "rep": 1,
        "stepNum": 1,
        "envPre": {"url": "https://app.test/tickets/7"},
        "internalState": state,
        "action": "click('12')",
    }


async def test_the_same_numeric_id_in_two_tenants_exports_stores_both(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        lessons = StepLessonMemory.from_memory(memory)
        files = [
            [_record("alice", "ticket-7", "r1", "alice's first run")],
            [_record("bob", "ticket-7", "r1", "bob's first run")],
            [_record("alice", "ticket-7", "r2", "alice's second run")],
        ]
        for records in files:
            await lessons.store_memories(import_memories(json.dumps(records)))
        alice = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="alice", agent_id="web"
        )
        bob = await lessons.load_all_memories_for_session("ticket-7", user_id="bob", agent_id="web")
        assert sorted(m.internal_state for m in alice) == [
            "alice's first run",
            "alice's second run",
        ]
        assert [m.internal_state for m in bob] == ["bob's first run"]
        assert all(m.metadata["original_id"] == 1 for m in [*alice, *bob])
        # Importing a file again replaces its steps instead of doubling them.
        await lessons.store_memories(import_memories(json.dumps(files[0])))
        assert await lessons.count("ticket-7", user_id="alice", agent_id="web") == 2
    finally:
        memory.close()
