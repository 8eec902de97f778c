"""The turns of a store outage survive a process that ends before the store is back.

`EpisodeRecorder(spill_path=...)` kept the episodes a failed write left waiting in memory and
spilled only those beyond `max_pending` (1000 by default). A process killed during an outage
(a deploy, the OOM killer), or one that ended without `aclose` (no adapter ever calls it),
took up to 1000 turns with it: the next process, on the same store and spill file, went on
recording with a gap. Even `aclose` returned "5 still pending" and dropped them. A failed
write now spills what waits, so the next recorder on the file writes every turn, once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from episodex import EpisodeRecorder, EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder

TURNS = 60
DOWN_FROM = 20  # the store fails from this turn to the end of the first process

#: A process that records turns 0..59, its store down from turn 20, then is killed (SIGKILL).
_FIRST_PROCESS = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from episodex import EpisodeRecorder, EpisodicMemory, open_engine
    from episodex.testing import FailingEngine, HashEmbedder

    store, spill, turns, down_from = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    async def main() -> None:
        engine = FailingEngine(open_engine(path=str(store)))
        memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
        recorder = EpisodeRecorder(memory, spill_path=spill)
        for n in range(turns):
            engine.writes = n >= down_from
            await recorder.record(
                short_summary=f"question {n}",
                long_summary=f"user: question {n}\\nassistant: answer {n}",
                user_id="u1", agent_id="support", conversation_id="c1",
                start_index=2 * n, end_index=2 * n + 1,
            )
        print(recorder.stats().pending, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no aclose, no atexit: a killed process

    asyncio.run(main())
    """
)


def _turn(n: int) -> dict[str, Any]:
    return {
        "short_summary": f"question {n}",
        "long_summary": f"user: question {n}\nassistant: answer {n}",
        "user_id": "u1",
        "agent_id": "support",
        "conversation_id": "c1",
        "start_index": 2 * n,
        "end_index": 2 * n + 1,
    }


def _ranges(memory: EpisodicMemory) -> list[tuple[int, int]]:
    rows = memory.store.read_recent(10_000, user_id="u1", agent_id="support")
    return sorted((int(row["start_index"]), int(row["end_index"])) for row in rows)


async def test_the_turns_of_an_outage_survive_a_killed_process(tmp_path: Path) -> None:
    store, spill = tmp_path / "store", tmp_path / "pending.jsonl"
    child = subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS, str(store), str(spill), str(TURNS), str(DOWN_FROM)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert int(child.stdout) == TURNS - DOWN_FROM  # waiting when it was killed

    # The next process: same store, same spill file, the conversation goes on.
    memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
    try:
        recorder = EpisodeRecorder(memory, spill_path=spill)
        for n in range(TURNS, TURNS + 5):
            await recorder.record(**_turn(n))
        assert await recorder.flush() == 0
        # Every turn exactly once, no gap, no overlap.
        assert _ranges(memory) == [(2 * n, 2 * n + 1) for n in range(TURNS + 5)]
        assert not spill.exists()
    finally:
        memory.close()


async def test_what_aclose_cannot_write_is_left_for_the_next_recorder(tmp_path: Path) -> None:
    store, spill = tmp_path / "store", tmp_path / "pending.jsonl"
    engine = FailingEngine(open_engine(path=str(store)))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    recorder = EpisodeRecorder(memory, spill_path=spill)
    for n in range(3):
        await recorder.record(**_turn(n))
    engine.writes = True
    for n in range(3, 8):
        await recorder.record(**_turn(n))
    assert await recorder.aclose() == 5
    memory.close()
    engine.close()

    memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
    try:
        again = EpisodeRecorder(memory, spill_path=spill)
        assert again.stats().pending == 5  # seen before anything is written
        assert await again.flush() == 0
        assert _ranges(memory) == [(2 * n, 2 * n + 1) for n in range(8)]
    finally:
        memory.close()
