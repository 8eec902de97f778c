"""One stored task episode that fails validation must not cost the store every other read.

A `QdrantTaskStore` point written by another program or an older release may hold an episode
record that no longer validates (a task that is a number, a missing record, a record that is
a string, a completion time of the wrong type). `read_recent`, `search` and `summary` parsed
every hit and raised `ValidationError` (or a raw `KeyError`) at the first such point: the
whole store, and every `TaskEpisodeRetriever` or strategy fed by it, returned nothing. Such an
episode is now left out, reported once with its point id, and the read still fills its limit
from the other episodes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from episodex import Episode, EpisodicMemory, QdrantTaskStore, Task
from episodex.plan import Filter, Match, Point
from episodex.testing import HashEmbedder

#: What the bad point's `episode` payload is made (None: the record is missing).
BAD: dict[str, Any] = {
    "task-number": {"task": 5},
    "record-text": "an episode",
    "record-missing": None,
    "completed-text": {"completed_at": "yesterday"},
}


@pytest.fixture(params=["edge", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    options: dict[str, Any] = (
        {"location": ":memory:"} if request.param == "memory" else {"path": tmp_path / "s"}
    )
    mem = EpisodicMemory(**options, embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _episode(episode_id: str, instruction: str, year: int) -> Episode:
    return Episode(
        id_=episode_id,
        task=Task(instruction=instruction),
        rollout="done",
        completed_at=datetime(year, 1, 1, tzinfo=UTC),
    )


def _spoil(store: QdrantTaskStore, episode_id: str, record: Any) -> str:
    """Rewrite the stored record of `episode_id` as another program might; its point id."""
    flt = Filter(must=(Match("episode_id", episode_id),))
    (hit,), _ = store.engine.scroll(store.collection, flt, limit=1)
    payload = dict(hit.payload)
    if record is None:
        del payload["episode"]
    elif isinstance(record, dict):
        payload["episode"] = {**payload["episode"], **record}
    else:
        payload["episode"] = record
    text = payload["text"]
    dense = store.embedder.embed_documents([text])[0].tolist()
    point = Point(
        id=hit.id,
        dense={"dense": dense},
        sparse={"bm25": store.bm25.document(text)},
        payload=payload,
    )
    store.engine.upsert(store.collection, [point])
    return hit.id


@pytest.mark.parametrize("record", BAD.values(), ids=list(BAD))
async def test_reads_leave_an_unreadable_task_episode_out(
    memory: EpisodicMemory, record: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = QdrantTaskStore(memory=memory, user_id="u", agent_id="a")
    await store.write(_episode("good", "book a table for two at the bistro", 2020))
    bad = f"bad-{uuid.uuid4()}"  # a point id of its own: each is reported once a process
    await store.write(_episode(bad, "book a table for two", 2030))
    point_id = _spoil(store, bad, record)
    caplog.set_level(logging.WARNING, logger="episodex")
    for _ in range(2):  # reported once, however often it is read
        # The bad episode is the newest and the best match: the others still fill the limit.
        assert [e.id_ for e in await store.read_recent(1)] == ["good"]
        assert [e.id_ for e in await store.search("book a table for two", k=1)] == ["good"]
        for mode in ("dense", "bm25"):
            found = await store.search("book a table for two", k=1, mode=mode)
            assert [e.id_ for e in found] == ["good"]
        assert "2 episodes" in (summary := await store.summary()) and "bistro" in summary
    (warning,) = [r.getMessage() for r in caplog.records if point_id in r.getMessage()]
    assert "task episode" in warning and "reads leave it out" in warning
    assert await store.count() == 2  # left out of reads, not deleted
