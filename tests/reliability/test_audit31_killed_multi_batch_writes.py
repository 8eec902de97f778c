"""A `memorize_many` or `import_` killed between its engine writes leaves nothing of itself.

Such a call writes `batch_size` episodes per engine write; one engine write is atomic, and a
failure that raises takes the earlier ones back (test_memorize_many_all_or_nothing). A process
killed between two writes (SIGKILL, os._exit, a power cut) took nothing back: the store opened
again with the first batches of a call that never returned, and the caller's retry stored them
twice (new episodes) or left some episodes replaced and others not (explicit ids). Now each
write of such a call carries a record of what it did, in the same engine write; the call
deletes those records when it is done, and opening the store takes back a call that left some.

The writer is a real subprocess on the embedded engine, killed by `os._exit` right after its
Nth engine upsert returned: exactly where a kill between two writes lands.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder

from ._support import total_points

# Slow: each case runs a writer process.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

USER, AGENT = "u", "a"
N = 600  # three engine writes of 256, 256 and 88

_WRITER = textwrap.dedent(
    """
    import json, os, sys
    from episodex import SyncEpisodicMemory
    from episodex._engines.edge import EdgeEngine
    from episodex.testing import HashEmbedder

    store, kill_after, call = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    upsert = EdgeEngine.upsert
    done = 0

    def killing_upsert(self, collection, points):
        global done
        upsert(self, collection, points)
        done += 1
        if done == kill_after:
            os._exit(9)  # killed between two engine writes: no clean-up code runs

    EdgeEngine.upsert = killing_upsert
    mem = SyncEpisodicMemory(store, embedder=HashEmbedder(dimension=1024), splade=False)
    if call["kind"] == "memorize_many":
        mem.memorize_many(call["episodes"])
    else:
        mem.import_(call["file"])
    print("returned")
    """
)


def _episodes(tag: str, n: int, ids: list[str] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        ep: dict[str, Any] = {
            "short_summary": f"{tag} short {i}",
            "long_summary": f"{tag} long {i}",
            "user_id": USER,
            "agent_id": AGENT,
            "conversation_id": f"conv-{tag}",
        }
        if ids is not None:
            ep["point_id"] = ids[i]
        out.append(ep)
    return out


def _write_and_kill(store: Path, kill_after: int, call: dict[str, Any]) -> str:
    """Run the writer; returns its stdout. The writer dies after `kill_after` upserts."""
    proc = subprocess.run(
        [sys.executable, "-c", _WRITER, str(store), str(kill_after), json.dumps(call)],
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert proc.returncode in (0, 9), proc.stderr
    return proc.stdout


def _open(store: Path) -> EpisodicMemory:
    # 1,024 dimensions, in the writer too: the test embedder hashes each word to one of
    # dimension - 1 buckets, and with 64 the numbers of many episodes shared a bucket, so
    # their texts had the same vector and tied in every dense search.
    return EpisodicMemory(store, embedder=HashEmbedder(dimension=1024), splade=False)


def _texts(mem: EpisodicMemory) -> dict[str, str]:
    items = mem.store.read_recent(10_000, user_id=USER, agent_id=AGENT)
    return {item["point_id"]: item["short_summary_text"] for item in items}


def _exported(mem: EpisodicMemory, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "export.jsonl"
    mem.store.export(out, user_id=USER, agent_id=AGENT)
    return [json.loads(line) for line in out.read_text().splitlines() if line]


@pytest.mark.parametrize("kill_after", [1, 2, 3])
def test_a_memorize_many_killed_between_its_writes_leaves_nothing(
    tmp_path: Path, kill_after: int
) -> None:
    store = tmp_path / "store"
    kept = _episodes("kept", 3)
    mem = _open(store)
    kept_ids = mem.store.memorize_many(kept)
    mem.close()

    out = _write_and_kill(
        store, kill_after, {"kind": "memorize_many", "episodes": _episodes("new", N)}
    )
    assert "returned" not in out  # killed before the call returned (after write 3: the last)

    mem = _open(store)
    try:
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 3
        assert sorted(_texts(mem)) == sorted(kept_ids)
        assert len(_exported(mem, tmp_path)) == 3
        assert total_points(mem) == 3  # nothing hidden left behind either
        found = mem.store.recall(user_id=USER, agent_id=AGENT, query="new short 5")
        assert {i["point_id"] for i in found["previous_conversations"]} <= set(kept_ids)
        # The retry stores each episode once.
        mem.store.memorize_many(_episodes("new", N))
        assert mem.store.count(user_id=USER, agent_id=AGENT) == N + 3
        assert total_points(mem) == N + 3
    finally:
        mem.close()


def test_an_import_killed_between_its_writes_imports_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    source = tmp_path / "episodes.jsonl"
    # Hand-written records without point ids: importing a partial import again doubles it.
    source.write_text("\n".join(json.dumps(ep) for ep in _episodes("imported", N)) + "\n")
    _write_and_kill(store, 2, {"kind": "import", "file": str(source)})

    mem = _open(store)
    try:
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0
        report = mem.store.import_(source)
        assert len(report.imported) == N
        assert mem.store.count(user_id=USER, agent_id=AGENT) == N
        assert total_points(mem) == N
    finally:
        mem.close()


def test_a_killed_replacing_write_gives_every_episode_its_stored_version_back(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    mem = _open(store)
    ids = mem.store.memorize_many(_episodes("old", N))
    mem.close()

    _write_and_kill(store, 2, {"kind": "memorize_many", "episodes": _episodes("new", N, ids)})

    mem = _open(store)
    try:
        texts = _texts(mem)
        assert texts == {pid: f"old short {i}" for i, pid in enumerate(ids)}
        assert total_points(mem) == N
        # Their vectors are the old texts' again: the short dense stream alone finds each by
        # its old words first. Checked on episodes whose old text has a vector of its own:
        # others share it with another episode's (a number hashed to the same bucket), tie,
        # and come in point-id order, which depends on the random ids.
        vectors = [HashEmbedder(dimension=1024).embed_query(f"old short {i}") for i in range(N)]
        keys = [v.tobytes() for v in vectors]
        unique = [i for i in range(N) if keys.count(keys[i]) == 1]
        assert len(unique) >= 100
        for i in unique[:: len(unique) // 8][:8]:
            found = mem.store.recall(
                user_id=USER,
                agent_id=AGENT,
                query=f"old short {i}",
                short_weight=1.0,
                long_weight=0.0,
                bm25_weight=0.0,
                with_stream_ranks=False,
            )["previous_conversations"]
            assert found[0]["point_id"] == ids[i], i
        # The retry replaces them all.
        mem.store.memorize_many(_episodes("new", N, ids))
        assert set(_texts(mem).values()) == {f"new short {i}" for i in range(N)}
    finally:
        mem.close()


def test_a_finished_multi_write_call_keeps_everything_after_a_kill(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # 3 upserts for the episodes, then the process dies after the call returned (write 99
    # never comes: the kill is the end of the script).
    out = _write_and_kill(store, 99, {"kind": "memorize_many", "episodes": _episodes("done", N)})
    assert "returned" in out
    mem = _open(store)
    try:
        assert mem.store.count(user_id=USER, agent_id=AGENT) == N
        assert total_points(mem) == N
    finally:
        mem.close()


def test_a_store_awaiting_a_reindex_takes_a_killed_write_back_once_reindexed(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    mem = _open(store)
    ids = mem.store.memorize_many(_episodes("old", N))
    mem.close()
    _write_and_kill(store, 2, {"kind": "memorize_many", "episodes": _episodes("new", N, ids)})

    # Opened with other models: the replaced episodes cannot be embedded yet.
    other = HashEmbedder(dimension=48, model_id="test/other")
    mem = EpisodicMemory(store, embedder=other, splade=False, for_reindex=True)
    try:
        asyncio.run(mem.reindex())
        texts = _texts(mem)
        assert texts == {pid: f"old short {i}" for i, pid in enumerate(ids)}
        assert total_points(mem) == N
    finally:
        mem.close()


def test_a_store_that_cannot_read_when_opened_takes_a_killed_write_back_before_the_next(
    tmp_path: Path,
) -> None:
    # Looking for a killed call's records reads the engine when the store is opened. An engine
    # failing to read then (an injected outage) must not make the store impossible to open;
    # the next call of several writes, which reuses the records' ids, takes the call back
    # first.
    store = tmp_path / "store"
    _write_and_kill(store, 1, {"kind": "memorize_many", "episodes": _episodes("killed", N)})
    failing = FailingEngine(open_engine(path=str(store)), reads=True)
    mem = EpisodicMemory(engine=failing, embedder=HashEmbedder(dimension=1024), splade=False)
    try:
        failing.reads = False
        mem.store.memorize_many(_episodes("next", N))
        texts = _texts(mem)
        assert len(texts) == N and all(t.startswith("next ") for t in texts.values())
        assert total_points(mem) == N  # the killed call's records are gone too
    finally:
        mem.close()
