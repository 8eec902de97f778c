"""An episode recorded with a spill file survives a process killed before it was written.

`EpisodeRecorder(spill_path=...)` put episodes in its spill file only after a write failed.
An episode the adapter had recorded (the user already had the model's answer) but that was
not written yet, queued for the background writer (`deferred=True`) or in the middle of its
first write, lived in memory only: a process killed then (the OOM killer, a container stop, a
deploy) lost it, though the user asked for durability by giving a spill file. The spill file
is now a write-ahead log: each episode is appended (fsync'ed) when it is recorded, before any
write is tried, and taken out once the store has it. The next recorder on the file writes
what a killed process left, each episode once (its point id was fixed when it was recorded,
so one the store already had is replaced, not stored twice).

Each child process blocks at a chosen point (in the embedder, or just after the store took
the batch), says so on stdout, and is killed there with SIGKILL: no timing is involved.
"""

from __future__ import annotations

import asyncio
import contextvars
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import StoreDown, recorder_episode, stored_summaries

TURNS = 6

#: Records turns 0..5 (long texts); at `stop_at` it blocks where `where` says, then is killed.
_CHILD = textwrap.dedent(
    """
    import asyncio, sys, threading
    from episodex import EpisodeRecorder, EpisodicMemory
    from episodex.testing import HashEmbedder

    store, spill, turns, stop_at, where, deferred = sys.argv[1:7]
    turns, stop_at, deferred = int(turns), int(stop_at), deferred == "deferred"
    marker = f"question {stop_at} "

    def block(what):
        print(what, flush=True)
        threading.Event().wait()  # until the parent kills this process

    class BlockingEmbedder(HashEmbedder):
        def embed_documents(self, texts):
            if where == "embedding" and any(marker in text for text in texts):
                block("blocked")
            return super().embed_documents(texts)

    async def main():
        memory = EpisodicMemory(path=store, embedder=BlockingEmbedder(), splade=False)
        store_writes = memory.store.memorize_many

        def memorize_many(episodes, **options):
            ids = store_writes(episodes, **options)
            if where == "stored" and any(marker in ep.short_summary + " " for ep in episodes):
                block("blocked")
            return ids

        memory.store.memorize_many = memorize_many
        recorder = EpisodeRecorder(memory, spill_path=spill, deferred=deferred)
        for n in range(turns):
            long = " ".join(f"user: question {n} part {k}; assistant: answer" for k in range(300))
            await recorder.record(
                short_summary=f"question {n}",
                long_summary=long,
                user_id="u1", agent_id="support", conversation_id="c1",
                start_index=2 * n, end_index=2 * n + 1,
            )
        print("recorded", flush=True)
        threading.Event().wait()  # deferred: the writer is blocked; wait to be killed

    asyncio.run(main())
    """
)


def _run_and_kill(store: Path, spill: Path, stop_at: int, where: str, mode: str) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(store),
            str(spill),
            str(TURNS),
            str(stop_at),
            where,
            mode,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.stdout is not None
    # Not deferred: the child blocks inside `record` (nothing after it is recorded). Deferred:
    # every `record` returns at once while the writer blocks; both lines come, in any order.
    expected = {"blocked"} if mode == "direct" else {"blocked", "recorded"}
    seen: set[str] = set()
    while seen != expected:
        line = child.stdout.readline()
        assert line, child.communicate()[1]
        seen.add(line.strip())
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL


def _stored(memory: EpisodicMemory) -> list[int]:
    rows = memory.store.read_recent(10_000, user_id="u1", agent_id="support")
    return sorted(int(row["start_index"]) // 2 for row in rows)


@pytest.mark.parametrize(
    ("mode", "stop_at", "where", "recorded"),
    [
        # Killed while embedding turn 3: turns 0..3 were recorded (3 returned to nobody).
        ("direct", 3, "embedding", 4),
        # Killed after the store took turn 3, before the spill file let go of it.
        ("direct", 3, "stored", 4),
        # Every turn recorded; the background writer killed embedding the first one.
        ("deferred", 0, "embedding", TURNS),
        # Every turn recorded; the writer killed after the store took the first batch.
        ("deferred", 0, "stored", TURNS),
    ],
)
async def test_every_recorded_episode_survives_a_kill(
    tmp_path: Path, mode: str, stop_at: int, where: str, recorded: int
) -> None:
    store, spill = tmp_path / "store", tmp_path / "pending.jsonl"
    _run_and_kill(store, spill, stop_at, where, mode)

    memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
    try:
        recorder = EpisodeRecorder(memory, spill_path=spill)
        waiting = recorder.stats().pending  # seen before anything is written
        assert await recorder.flush() == 0
        # Every recorded turn, each exactly once.
        assert _stored(memory) == list(range(recorded))
        assert waiting >= 1
        assert not spill.exists()
    finally:
        memory.close()


async def test_an_episode_appended_while_another_recorder_rewrites_the_file_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two recorders on one spill file: a rewrite never replaces the other's fresh append."""
    spill = tmp_path / "pending.jsonl"
    first = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    second = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        store_a = StoreDown.put_in(first, monkeypatch)
        StoreDown.put_in(second, monkeypatch)  # the second recorder's store stays down
        writer = EpisodeRecorder(first, spill_path=spill)
        other = EpisodeRecorder(second, spill_path=spill)
        await writer.record(**recorder_episode(1))  # waits in the spill file
        store_a.down = False

        # The writer stores question 1, then takes it out of the file (an unlink, or a
        # replace): it is held there until the other recorder has appended question 2, or
        # is waiting to (it cannot finish first where the file is locked).
        rewriting, go_on = threading.Event(), threading.Event()
        other_thread: list[threading.Thread] = []
        # The other recorder's calls, in its thread or in the worker threads it hands its
        # file work to (they copy its context).
        in_other: contextvars.ContextVar[bool] = contextvars.ContextVar("in_other", default=False)
        real_unlink, real_replace, real_flock = os.unlink, os.replace, fcntl.flock

        def hold(path: Any) -> None:
            if str(path) == str(spill) and not in_other.get():
                rewriting.set()
                go_on.wait()

        def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
            hold(path)
            real_unlink(path, *args, **kwargs)

        def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            hold(dst)
            real_replace(src, dst, *args, **kwargs)

        def flock(fd: int, operation: int) -> None:
            if in_other.get():
                go_on.set()  # the other recorder waits for the lock: let the writer go on
            real_flock(fd, operation)

        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(fcntl, "flock", flock)

        def record_other() -> None:
            in_other.set(True)
            asyncio.run(other.record(**recorder_episode(2)))
            go_on.set()  # appended without waiting for anyone

        other_thread.append(threading.Thread(target=record_other))
        flushing = asyncio.create_task(writer.flush())
        await asyncio.to_thread(rewriting.wait)
        other_thread[0].start()
        await flushing
        await asyncio.to_thread(other_thread[0].join)
        monkeypatch.undo()

        # Question 2 was never stored: it must still wait in the file.
        assert stored_summaries(second) == []
        assert stored_summaries(first) == ["question 1"]
        last = EpisodeRecorder(first, spill_path=spill)
        assert await last.flush() == 0
        assert stored_summaries(first) == ["question 1", "question 2"]
    finally:
        first.close()
        second.close()
