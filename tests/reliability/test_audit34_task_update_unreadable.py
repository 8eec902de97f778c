"""`QdrantTaskStore.update` of a stored point that cannot be read back replaces it.

A point written by another program or an older release may lack its `episode` record or its
`text`, or hold them in another shape. Every read leaves such a point out and its warning says
to store the episode again corrected; but `update`, the call for doing so, read the stored
record to choose the indexed text and raised a raw `KeyError` (no record, or no text), a raw
`TypeError` (a record that is a string) or a `ValidationError` about the stored record as if
the caller's episode were wrong. The update now replaces such a point with the new episode
(indexed by its own text, the stored one being unreadable), and reports it once.
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

_DROP = object()

#: What is made of the stored point's payload: field -> new value (`_DROP`: removed).
BAD: dict[str, dict[str, Any]] = {
    "record-missing": {"episode": _DROP},
    "record-text": {"episode": "an episode"},
    "task-number": {"episode": {"task": 5}},
    "text-missing": {"text": _DROP},
    "text-number": {"text": 7},
    "text-blank": {"text": "  "},
}


@pytest.fixture(params=["edge", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    options: dict[str, Any] = (
        {"location": ":memory:"} if request.param == "memory" else {"path": tmp_path / "s"}
    )
    mem = EpisodicMemory(**options, embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _spoil(store: QdrantTaskStore, episode_id: str, changes: dict[str, Any]) -> str:
    """Rewrite the stored point of `episode_id` as another program might; its point id."""
    flt = Filter(must=(Match("episode_id", episode_id),))
    (hit,), _ = store.engine.scroll(store.collection, flt, limit=1)
    payload = dict(hit.payload)
    text = payload["text"]
    for key, value in changes.items():
        if value is _DROP:
            del payload[key]
        elif isinstance(value, dict):
            payload[key] = {**payload[key], **value}
        else:
            payload[key] = value
    point = Point(
        id=hit.id,
        dense={"dense": store.embedder.embed_documents([text])[0].tolist()},
        sparse={"bm25": store.bm25.document(text)},
        payload=payload,
    )
    store.engine.upsert(store.collection, [point])
    return hit.id


@pytest.mark.parametrize("changes", BAD.values(), ids=list(BAD))
async def test_an_update_replaces_a_stored_episode_that_cannot_be_read(
    memory: EpisodicMemory, changes: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    store = QdrantTaskStore(memory=memory, user_id="u", agent_id="a")
    await store.write(
        Episode(id_="other", task=Task(instruction="water the plants"), rollout="done"),
    )
    bad = f"bad-{uuid.uuid4()}"  # a point id of its own: each is reported once a process
    task = Task(instruction="book a table for two")
    await store.write(
        Episode(id_=bad, task=task, rollout="first try"), embedded_text="custom indexed text"
    )
    point_id = _spoil(store, bad, changes)
    caplog.set_level(logging.WARNING, logger="episodex")

    fixed = Episode(
        id_=bad, task=task, rollout="corrected", completed_at=datetime(2030, 1, 1, tzinfo=UTC)
    )
    await store.update(fixed)

    newest = await store.read_recent(1)
    assert [(e.id_, e.rollout) for e in newest] == [(bad, "corrected")]
    assert await store.count() == 2
    # Indexed by its own text: the stored one could not be trusted.
    found = await store.search("book a table for two", k=1, mode="bm25")
    assert [e.id_ for e in found] == [bad]
    (warning,) = [r.getMessage() for r in caplog.records if point_id in r.getMessage()]
    assert "task episode" in warning and "update replaces it" in warning


async def test_an_update_keeps_a_readable_custom_text(memory: EpisodicMemory) -> None:
    store = QdrantTaskStore(memory=memory)
    task = Task(instruction="book a table for two")
    await store.write(Episode(id_="e", task=task), embedded_text="restaurant reservation")
    await store.update(Episode(id_="e", task=task, rollout="again"))
    flt = Filter(must=(Match("episode_id", "e"),))
    (hit,), _ = store.engine.scroll(store.collection, flt, limit=1)
    assert hit.payload["text"] == "restaurant reservation"
