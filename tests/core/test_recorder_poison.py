"""One episode the store refuses must not block the recorder's queue for everyone after it.

The recorder writes everything pending in one batch. An episode whose `point_id` belongs to
another user is refused by the store (`ValidationError`) at write time, not when it is
queued; it was kept "for retry", failing every later batch, so no turn of any user was
stored again. It is now rejected alone (logged and counted) and the rest is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _episode(user: str, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "short_summary": f"question {n}",
        "long_summary": f"User asked question {n}; the agent answered it.",
        "user_id": user,
        "agent_id": "support",
        "conversation_id": "c1",
        "start_index": 2 * n,
        "end_index": 2 * n + 1,
        **extra,
    }


async def _texts(memory: EpisodicMemory, user: str) -> list[str]:
    items = await memory.read_recent(100, user_id=user, agent_id="support")
    return sorted(item["short_summary_text"] for item in items)


async def test_an_episode_the_store_refuses_does_not_block_the_others(
    memory: EpisodicMemory,
) -> None:
    recorder = EpisodeRecorder(memory)
    taken = str(uuid.uuid4())
    assert await recorder.record(**_episode("alice", 0, point_id=taken)) == taken
    # Bob's episode claims Alice's point: refused, and Alice's episode is unchanged.
    assert await recorder.record(**_episode("bob", 1, point_id=taken)) is None
    # Later turns of both users are stored as before.
    assert await recorder.record(**_episode("bob", 2)) is not None
    assert await recorder.record(**_episode("alice", 3)) is not None
    assert await recorder.flush() == 0
    assert await _texts(memory, "alice") == ["question 0", "question 3"]
    assert await _texts(memory, "bob") == ["question 2"]
    stats = recorder.stats()
    assert (stats.recorded, stats.rejected, stats.pending) == (3, 1, 0)
    assert "belongs to" in (stats.last_error or "") or "another" in (stats.last_error or "")
