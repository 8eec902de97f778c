"""A writer run as a subprocess by the durability tests, then killed with SIGKILL.

Usage: `python _writer.py episodes|jsonl STORE ROUND BATCH_SIZE`

It writes batch after batch, forever, with point ids derived from (round, batch, index) so
the test knows the ids of a batch that was in flight when the kill came. After each call that
RETURNED it prints one JSON line `{"batch": b, "ids": [...]}` and flushes stdout: whatever
the test reads was acknowledged to the caller before the kill.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from episodex.testing import HashEmbedder

NAMESPACE = uuid.UUID("6f1c2a52-6c0e-4c55-9a53-0d5b0c1e7d11")


def point_id(round_: int, batch: int, index: int) -> str:
    """The id of one episode of one batch of one writer round."""
    return str(uuid.uuid5(NAMESPACE, f"{round_}/{batch}/{index}"))


def episode(round_: int, batch: int, index: int) -> dict[str, object]:
    """The deterministic record the writer stores at (round, batch, index)."""
    return {
        "point_id": point_id(round_, batch, index),
        "user_id": "user-1",
        "agent_id": "writer",
        "conversation_id": f"r{round_}-b{batch}",
        "short_summary": f"durable note {round_} {batch} {index}",
        "long_summary": f"durable record of round {round_} batch {batch} item {index} " * 3,
        "start_index": index,
        "flows_activated": ["durability"],
        "tools_invoked": ["writer"],
        "average_user_sentiment": 0.25,
        "metadata": {"round": round_, "batch": batch, "index": index},
    }


def say(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def write_episodes(store: str, round_: int, size: int) -> None:
    from episodex import SyncEpisodicMemory

    mem = SyncEpisodicMemory(store, embedder=HashEmbedder())
    say(ready=True)
    batch = 0
    while True:
        ids = mem.memorize_many([episode(round_, batch, i) for i in range(size)])
        say(batch=batch, ids=ids)
        batch += 1


async def write_jsonl(store: str, round_: int, size: int) -> None:
    from episodex import Episode, JSONLTaskStore, Task, TaskResult

    jsonl = JSONLTaskStore(store)
    say(ready=True)
    batch = 0
    while True:
        ids = []
        for i in range(size):
            task = Task(
                instruction=f"durable task {round_} {batch} {i}", id_=point_id(round_, batch, i)
            )
            ep = Episode(
                id_=point_id(round_, batch, i),
                task=task,
                result=TaskResult(task_id=task.id_, content="x" * 2000),
            )
            await jsonl.write(ep)
            ids.append(ep.id_)
        say(batch=batch, ids=ids)
        batch += 1


if __name__ == "__main__":
    kind, path, round_arg, size_arg = sys.argv[1:5]
    if kind == "episodes":
        write_episodes(path, int(round_arg), int(size_arg))
    else:
        asyncio.run(write_jsonl(path, int(round_arg), int(size_arg)))
