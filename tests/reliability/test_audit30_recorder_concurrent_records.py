"""An episode another `record` call wrote for it is reported stored, not as waiting.

One recorder serves every run of an adapter (the middleware's agent runs, the classic memory's
chains), so `record` calls overlap. Each writes everything pending, one writer at a time: the
call that writes first takes the episodes queued by the others along. Those others then found
nothing left to write and returned None for their own episode, which `record` documents as
"waiting: deferred, or the store failed", though the store was healthy and the episode stored.

Now `record` returns the point id of an episode that is stored, whichever call wrote it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import FirstWriteWaits, recorder_episode, stored_summaries

GUARD = 60  # seconds: only a deadlock guard, never how the calls meet


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


async def test_an_episode_another_call_wrote_is_reported_stored(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = EpisodeRecorder(memory)
    gate = FirstWriteWaits(memory)
    monkeypatch.setattr(memory.store, "memorize_many", gate)
    ids = {n: f"00000000-0000-4000-8000-00000000000{n}" for n in (1, 2, 3)}
    first = asyncio.create_task(recorder.record(**recorder_episode(1, point_id=ids[1])))
    assert await asyncio.to_thread(gate.entered.wait, GUARD)
    # While the first write runs, two more calls queue their episodes and wait to write.
    others = [
        asyncio.create_task(recorder.record(**recorder_episode(n, point_id=ids[n]))) for n in (2, 3)
    ]
    while recorder.stats().pending < 3:
        await asyncio.sleep(0)  # lets the two calls queue (no time passes)
    gate.go.set()
    answers = await asyncio.gather(first, *others)
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.write_failures) == (3, 0, 0)
    # The healthy store stored every episode: no call may say its episode is waiting.
    assert answers == [ids[1], ids[2], ids[3]]
