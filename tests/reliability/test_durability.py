"""Durability: a writer killed with SIGKILL loses no acknowledged write and leaves nothing half
written; a store folder is never opened twice at once.

The writer (`_writer.py`) runs as a real subprocess and prints the ids of each call that
returned; the test kills it at a few points, reopens the store without any repair step and
checks every acknowledged episode field by field and stream by stream.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    Episode,
    EpisodicMemory,
    JSONLTaskStore,
    StoreFileError,
    Task,
    TaskResult,
)
from episodex.testing import HashEmbedder

from ._support import snapshot, total_points
from ._writer import episode, point_id

# Slow: kills writer processes and reopens stores; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("_writer.py")
TESTS = Path(__file__).resolve().parents[1]
BATCH = 40
# (batches acknowledged before the kill, extra delay): kills land at different moments of the
# next memorize_many call (embedding, the engine's write, or between calls).
KILLS = [(1, 0.0), (3, 0.002), (6, 0.01), (2, 0.001), (2, 0.0005), (1, 0.003)]
PAYLOAD_KEYS = {
    "id",
    "user_id",
    "agent_id",
    "conversation_id",
    "short_summary_text",
    "long_summary_text",
    "start_index",
    "end_index",
    "overlap",
    "flows_activated",
    "tools_invoked",
    "speakers",
    "speaker_keys",
    "timestamp_begin",
    "timestamp_end",
    "average_user_sentiment",
    "user_sentiment_variance",
    "metadata",
    "created_at",
    "schema",
}


def _run_and_kill(
    kind: str, store: Path, round_: int, after: int, delay: float
) -> dict[int, list[str]]:
    """Start a writer, SIGKILL it after `after` acknowledged batches; return {batch: ids}."""
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), kind, str(store), str(round_), str(BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged: dict[int, list[str]] = {}
    try:
        assert proc.stdout is not None
        while len(acknowledged) < after:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(
                    f"the writer died on its own: {proc.stderr.read() if proc.stderr else ''}"
                )
            msg = json.loads(line)
            if "batch" in msg:
                acknowledged[msg["batch"]] = msg["ids"]
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    # Lines printed before the kill are acknowledged writes too.
    for line in out.splitlines():
        msg = json.loads(line)
        if "batch" in msg:
            acknowledged[msg["batch"]] = msg["ids"]
    return acknowledged


@pytest.mark.timeout(180)
def test_sigkill_during_memorize_many_keeps_every_returned_write(tmp_path: Path) -> None:
    store = tmp_path / "store"
    expected: dict[str, dict[str, Any]] = {}  # acknowledged point id -> its record
    for round_, (after, delay) in enumerate(KILLS):
        acknowledged = _run_and_kill("episodes", store, round_, after, delay)
        assert sorted(acknowledged) == list(range(len(acknowledged)))
        for batch, ids in acknowledged.items():
            assert ids == [point_id(round_, batch, i) for i in range(BATCH)]
            expected.update({pid: episode(round_, batch, i) for i, pid in enumerate(ids)})
        in_flight = [point_id(round_, len(acknowledged), i) for i in range(BATCH)]

        # Reopen as any user would: no repair step, no flag.
        mem = EpisodicMemory(store, embedder=HashEmbedder())
        try:
            points = snapshot(mem)
            stored = {p["id"] for p in points}
            assert set(expected) <= stored, (
                f"round {round_}: lost {len(set(expected) - stored)} returned writes"
            )
            # The call in flight at the kill is one engine write: all of it or none of it.
            landed = stored & set(in_flight)
            assert len(landed) in (0, BATCH), f"round {round_}: half a batch landed ({len(landed)})"
            if landed:
                expected.update(
                    {pid: episode(round_, len(acknowledged), i) for i, pid in enumerate(in_flight)}
                )
            assert stored == set(expected)
            assert total_points(mem) == len(expected)

            # Nothing half written: every point has every field, with the values written.
            for p in points:
                assert set(p) == PAYLOAD_KEYS, p["id"]
                want = expected[p["id"]]
                assert p["short_summary_text"] == want["short_summary"]
                assert p["long_summary_text"] == want["long_summary"]
                assert p["conversation_id"] == want["conversation_id"]
                assert p["metadata"] == want["metadata"]
                assert p["flows_activated"] == ["durability"]

            # And all three vectors: each stream alone finds every point.
            for weights in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):
                res = mem.store.recall(
                    user_id="user-1",
                    agent_id="writer",
                    query="durable note record",
                    previous_conversation_limit=10_000,
                    stage1_limit=10_000,
                    short_weight=weights[0],
                    long_weight=weights[1],
                    bm25_weight=weights[2],
                )
                found = {i["point_id"] for i in res["previous_conversations"]}
                assert found == stored, (
                    f"stream {weights}: {len(stored - found)} points without a vector"
                )
        finally:
            mem.close()


def await_sync(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.timeout(180)
def test_sigkill_during_jsonl_writes_keeps_every_returned_write(tmp_path: Path) -> None:
    folder = tmp_path / "jsonl"
    expected: set[str] = set()
    for round_, (after, delay) in enumerate(KILLS[:2]):
        acknowledged = _run_and_kill("jsonl", folder, round_, after, delay)
        for ids in acknowledged.values():
            expected.update(ids)
        in_flight = {point_id(round_, len(acknowledged), i) for i in range(BATCH)}
        store = JSONLTaskStore(folder)  # the default: a torn last line is repaired and reported
        for torn in store.torn_lines:
            assert torn.saved_to.exists()
            assert torn.line_number >= 1
        count = await_sync(store.count())
        ids = {e.id_ for e in await_sync(store.read_recent(count))}
        assert expected <= ids, f"round {round_}: lost {len(expected - ids)} returned writes"
        assert ids - expected <= in_flight
        expected |= ids
        store.close()
        # The file is whole again: a fresh open finds no torn line.
        again = JSONLTaskStore(folder, on_torn_line="raise")
        assert again.torn_lines == []
        again.close()


async def test_a_torn_last_jsonl_line_is_detected_and_reported(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    for i in range(3):
        task = Task(instruction=f"task {i}")
        await store.write(
            Episode(task=task, result=TaskResult(task_id=task.id_, content=f"done {i}"))
        )
    whole = store.path.read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    # A crash in the middle of appending a fourth record leaves half a line.
    with store.path.open("ab") as fh:
        fh.write(last[: len(last) // 2])
    torn_file = store.path.read_bytes()
    store.close()

    with pytest.raises(StoreFileError, match="torn line 4") as info:
        JSONLTaskStore(tmp_path, on_torn_line="raise")
    assert info.value.errors[0][0] == 4
    assert store.path.read_bytes() == torn_file  # "raise" changes nothing

    repaired = JSONLTaskStore(tmp_path)
    assert [t.line_number for t in repaired.torn_lines] == [4]
    assert repaired.torn_lines[0].saved_to.read_bytes() == last[: len(last) // 2] + b"\n"
    assert await repaired.count() == 3
    assert store.path.read_bytes() == whole
    task = Task(instruction="after the crash")
    await repaired.write(Episode(task=task, result=TaskResult(task_id=task.id_, content="ok")))
    repaired.close()
    assert await JSONLTaskStore(tmp_path, on_torn_line="raise").count() == 4


# -- one store, two openers --------------------------------------------------------------

_SECOND_PROCESS = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from episodex import EpisodicMemory, StoreLockedError
    from episodex.testing import HashEmbedder
    try:
        mem = EpisodicMemory(sys.argv[1], embedder=HashEmbedder())
    except StoreLockedError as exc:
        print("locked:", exc)
        sys.exit(3)
    print("opened", mem.store.count(user_id="u", agent_id="a"))
    mem.close()
    """
)


def _second_process(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SECOND_PROCESS, str(store), str(TESTS)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def _memorize(mem: EpisodicMemory, n: int, tag: str) -> None:
    mem.store.memorize_many(
        [
            {
                "short_summary": f"{tag} {i}",
                "long_summary": f"{tag} long {i}",
                "user_id": "u",
                "agent_id": "a",
                "conversation_id": "c",
            }
            for i in range(n)
        ]
    )


@pytest.mark.timeout(180)
def test_a_second_process_gets_store_locked_error(tmp_path: Path) -> None:
    store = tmp_path / "store"
    mem = EpisodicMemory(store, embedder=HashEmbedder())
    try:
        _memorize(mem, 3, "first")
        before = snapshot(mem)
        second = _second_process(store)
        assert second.returncode == 3, second.stdout + second.stderr
        assert "another process" in second.stdout and "close that one first" in second.stdout
        # The refused opener changed nothing, and the first keeps working.
        assert snapshot(mem) == before
        _memorize(mem, 1, "after")
        assert mem.store.count(user_id="u", agent_id="a") == 4
    finally:
        mem.close()
    # Once the first is closed, the folder opens elsewhere with everything in it.
    again = _second_process(store)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.split() == ["opened", "4"]


def test_a_second_memory_in_the_same_process_shares_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = EpisodicMemory(store, embedder=HashEmbedder())
    try:
        _memorize(first, 2, "first")
        second = EpisodicMemory(store, embedder=HashEmbedder())
        _memorize(second, 1, "second")
        second.close()  # closing one handle leaves the other working
        _memorize(first, 1, "still")
        assert first.store.count(user_id="u", agent_id="a") == 4
    finally:
        first.close()
    reopened = EpisodicMemory(store, embedder=HashEmbedder())
    assert reopened.store.count(user_id="u", agent_id="a") == 4
    reopened.close()
