"""`EpisodeRecorder.forget_waiting` takes out the waiting episodes asked for, and only those.

Written for a LangGraph fork (the branch the thread left must not be written after it is
forgotten): the episodes waiting for the store, in memory and in the spill file, that the
predicate accepts are never written; every other waiting episode still is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConversationEpisode, EpisodeRecorder, EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder

ALICE = {"user_id": "alice", "agent_id": "support"}


def _episode(conversation: str, start: int) -> dict[str, object]:
    return {
        **ALICE,
        "conversation_id": conversation,
        "short_summary": f"{conversation} at {start}",
        "long_summary": f"user: question {start} of {conversation}",
        "start_index": start,
    }


@pytest.mark.parametrize("spill", [False, True], ids=["in-memory", "spill-file"])
async def test_only_the_waiting_episodes_asked_for_are_taken_out(
    tmp_path: Path, *, spill: bool
) -> None:
    engine = FailingEngine(open_engine(path=str(tmp_path / "store")), writes=True)
    async with EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False) as memory:
        recorder = EpisodeRecorder(memory, spill_path=tmp_path / "waiting.jsonl" if spill else None)
        for conversation in ("c1", "c2"):
            for start in (0, 2, 4):
                assert await recorder.record(**_episode(conversation, start)) is None
        assert recorder.stats().pending == 6

        def left(episode: ConversationEpisode) -> bool:
            return episode.conversation_id == "c1" and episode.start_index >= 2

        assert await recorder.forget_waiting(left) == 2
        assert recorder.stats().pending == 4
        engine.writes = False
        assert await recorder.flush() == 0
        stored = await memory.read_recent(10, **ALICE)
        assert sorted((e["conversation_id"], e["start_index"]) for e in stored) == [
            ("c1", 0),
            ("c2", 0),
            ("c2", 2),
            ("c2", 4),
        ]
        assert await recorder.forget_waiting(left) == 0
