"""An episode recorded again under its point id while its first write runs is not lost.

An adapter records an episode again under the same point id to replace it (a longer summary
of the same exchange, a LangGraph replay). When the new version was recorded while the
write of the old one was under way, the recorder took every episode of that id out of its
queue and its spill file once the old write finished: the new version too, though the store
held the old one. The new version was never written; a process killed right then (or even a
clean `flush`) left the old one in the store for good. Now only the versions a write stored
are taken out; a newer one recorded meanwhile is written after it.

The first write is held inside the store until the second version is queued: no timing is
involved. The kill test blocks the child where the test kills it with SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import FirstWriteWaits, recorder_episode

GUARD = 60  # seconds: only a deadlock guard, never how the calls meet
POINT = "00000000-0000-4000-8000-000000000033"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _stored_versions(memory: EpisodicMemory) -> list[str]:
    rows = memory.store.read_recent(100, user_id="u1", agent_id="support")
    return sorted(row["short_summary_text"] for row in rows)


@pytest.mark.parametrize("spill", [True, False], ids=["spill-file", "in-memory"])
async def test_a_version_recorded_during_the_first_write_is_written_after_it(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spill: bool
) -> None:
    spill_path = tmp_path / "pending.jsonl" if spill else None
    recorder = EpisodeRecorder(memory, spill_path=spill_path, deferred=True)
    gate = FirstWriteWaits(memory, stored_first=True)
    monkeypatch.setattr(memory.store, "memorize_many", gate)
    try:
        await recorder.record(**recorder_episode(1, point_id=POINT))
        assert await asyncio.to_thread(gate.entered.wait, GUARD)
        # The old version is stored; its write has not finished. The new one is queued.
        await recorder.record(**recorder_episode(2, point_id=POINT))
        gate.go.set()
        assert await recorder.flush() == 0
        assert _stored_versions(memory) == ["question 2"]
    finally:
        gate.go.set()
        await recorder.aclose()


#: Records version 1 (deferred); the writer stores it and waits; version 2 is recorded; the
#: writer goes on. It blocks at the next write (version 2's), or says "flushed" if none comes.
_CHILD = textwrap.dedent(
    """
    import asyncio, sys, threading
    from episodex import EpisodeRecorder, EpisodicMemory
    from episodex.testing import HashEmbedder

    store, spill, point = sys.argv[1:4]

    async def main():
        memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
        real = memory.store.memorize_many
        first_stored, go = threading.Event(), threading.Event()

        def memorize_many(episodes, **options):
            if first_stored.is_set():
                print("blocked", flush=True)  # version 2's write: killed here
                threading.Event().wait()
            ids = real(episodes, **options)
            first_stored.set()
            go.wait()
            return ids

        memory.store.memorize_many = memorize_many
        recorder = EpisodeRecorder(memory, spill_path=spill, deferred=True)
        episode = dict(user_id="u1", agent_id="support", conversation_id="c1", point_id=point)
        await recorder.record(short_summary="question 1", long_summary="version 1", **episode)
        await asyncio.to_thread(first_stored.wait)
        await recorder.record(short_summary="question 2", long_summary="version 2", **episode)
        go.set()
        await recorder.flush()
        print("flushed", flush=True)
        threading.Event().wait()

    asyncio.run(main())
    """
)


async def test_the_newer_version_survives_a_kill_after_the_first_write(tmp_path: Path) -> None:
    store, spill = tmp_path / "store", tmp_path / "pending.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(store), str(spill), POINT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() in {"blocked", "flushed"}, child.communicate()[1]
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL

    memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
    try:
        recorder = EpisodeRecorder(memory, spill_path=spill)
        assert await recorder.flush() == 0
        assert _stored_versions(memory) == ["question 2"]
    finally:
        memory.close()
