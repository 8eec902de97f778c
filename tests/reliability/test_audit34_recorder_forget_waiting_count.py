"""`EpisodeRecorder.forget_waiting` counts the episodes it takes out, each once.

An episode recorded again under its id while the store was down (a LangGraph run replayed
from a checkpoint) waits as two versions: two lines of the spill file, or two entries of the
queue, or one of each. Taking it out counted every version, so the count said more episodes
were forgotten than there were. It is now the number of distinct episodes (point ids).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from episodex import ConversationEpisode, EpisodeRecorder, EpisodicMemory, open_engine
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
    [(True, False), (False, True), (True, True)],
    ids=["spill-file", "queue", "deferred-spill-file"],
)
async def test_an_episode_waiting_as_two_versions_is_counted_once(
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

        def left(episode: ConversationEpisode) -> bool:
            return episode.start_index >= 2

        assert await recorder.forget_waiting(left) == 2
        assert recorder.stats().pending == 0
        engine.writes = False
        assert await recorder.flush() == 0
        assert await memory.read_recent(10, user_id="alice", agent_id="support") == []
        await recorder.aclose()
