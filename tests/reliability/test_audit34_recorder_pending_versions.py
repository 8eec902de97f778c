"""`EpisodeRecorder.stats().pending` (and `flush`) count a waiting episode once.

An episode recorded again under its id while the store was down (a LangGraph run replayed
from a checkpoint) waits as two versions: two lines of the spill file, two entries of the
queue, or one of each. `pending` counted every version, so a recorder said more episodes
waited than there were (and `flush` returned that). It now counts distinct point ids.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from episodex import EpisodeRecorder, EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder

ALICE = {"user_id": "alice", "agent_id": "support", "conversation_id": "c1"}


def _version(point_id: str, start: int, answer: str) -> dict[str, object]:
    return {
        **ALICE,
        "point_id": point_id,
        "short_summary": f"question {start}",
        "long_summary": f"user: question {start}\nassistant: {answer}",
        "start_index": start,
    }


@pytest.mark.parametrize(
    ("spill", "deferred"),
    [(True, False), (False, True), (False, False), (True, True)],
    ids=["spill-file", "queue", "direct-queue", "deferred-spill-file"],
)
async def test_an_episode_waiting_as_two_versions_is_pending_once(
    tmp_path: Path, *, spill: bool, deferred: bool
) -> None:
    engine = FailingEngine(open_engine(path=str(tmp_path / "store")), writes=True)
    async with EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False) as memory:
        recorder = EpisodeRecorder(
            memory, spill_path=tmp_path / "waiting.jsonl" if spill else None, deferred=deferred
        )
        replayed, other = str(uuid.uuid4()), str(uuid.uuid4())
        assert await recorder.record(**_version(replayed, 2, "first answer")) is None
        assert await recorder.record(**_version(replayed, 2, "second answer")) is None
        assert await recorder.record(**_version(other, 4, "third answer")) is None
        stats = recorder.stats()
        assert stats.pending == 2
        assert stats.spilled == (2 if spill else 0)
        assert await recorder.flush() == 2
        engine.writes = False
        assert await recorder.flush() == 0
        stored = await memory.read_recent(10, user_id="alice", agent_id="support")
        assert sorted(e["long_summary_text"].split("\n")[1] for e in stored) == [
            "assistant: second answer",
            "assistant: third answer",
        ]
        await recorder.aclose()
