"""Issue 14, item 3: every file the package replaces is written through a private temp file."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from episodex import Episode, JSONLTaskStore, SyncEpisodicMemory, Task, TaskResult
from episodex.testing import HashEmbedder


def _fill(mem: SyncEpisodicMemory, user: str, n: int) -> None:
    mem.memorize_many(
        [
            {
                "short_summary": f"{user} episode {i}",
                "long_summary": f"{user} long text {i} " + "x" * 300,
                "user_id": user,
                "agent_id": "a",
                "conversation_id": "c",
            }
            for i in range(n)
        ]
    )


def test_two_exports_to_one_path_never_mix(tmp_path: Path) -> None:
    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    try:
        _fill(mem, "alice", 300)
        _fill(mem, "bob", 200)
        target = tmp_path / "export.jsonl"
        errors: list[BaseException] = []

        def export(user: str) -> None:
            try:
                for _ in range(5):
                    mem.export(target, user_id=user, agent_id="a")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=export, args=(u,)) for u in ("alice", "bob")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        records = [json.loads(line) for line in target.read_text().splitlines()]
        users = {r["user_id"] for r in records}
        assert len(users) == 1  # one whole export, never both tenants' records
        assert len(records) == {"alice": 300, "bob": 200}[users.pop()]
        assert [p.name for p in tmp_path.iterdir()] == ["export.jsonl"]  # no temp left behind
    finally:
        mem.close()


def test_a_planted_symlink_at_the_old_temp_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "export.jsonl"
    os.symlink(victim, tmp_path / ".export.jsonl.tmp")  # the name the old code always used
    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    try:
        _fill(mem, "alice", 3)
        assert mem.export(target, user_id="alice", agent_id="a") == 3
    finally:
        mem.close()
    assert victim.read_text() == "precious"
    assert len(target.read_text().splitlines()) == 3


async def test_jsonl_compaction_replaces_the_file_atomically(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path / "tasks")
    for i in range(3):
        task = Task(id_=f"t{i}", instruction=f"do {i}")
        await store.write(
            Episode(task=task, result=TaskResult(task_id=task.id_, content=f"done {i}"))
        )
    path = next((tmp_path / "tasks").glob("*.jsonl"))
    os.symlink(tmp_path / "elsewhere", path.with_name(f".{path.name}.compact"))
    assert await store.compact() == 3
    assert not (tmp_path / "elsewhere").exists()
    temps = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert temps == []
    assert len(path.read_text().splitlines()) == 3
    assert await store.count() == 3
