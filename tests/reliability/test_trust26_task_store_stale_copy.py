"""Rewriting a task episode stored under the first id scheme leaves one copy, whatever fails.

`QdrantTaskStore` wrote an episode under its new point id, then deleted the copy an older
store had kept under the first scheme's id (keyed by task id) with a second engine call. When
that delete failed (or the process stopped between the two), the write raised, yet both
copies stayed: every read then returned the episode twice, the old text beside the new.
The stale copy is now hidden by the same upsert that writes the episode (a tombstone over its
point, removed after), so the rewrite is applied whole or not at all. A tombstone whose removal
failed stays in the engine, where no read of any store reaches it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from episodex import Episode, EpisodexError, QdrantTaskStore, Task, open_engine
from episodex.plan import Filter, HasId, Point
from episodex.testing import FailingEngine, HashEmbedder

# How the first scheme named an episode's point: from its task id alone.
_FIRST_SCHEME = uuid.UUID("5b0f8a52-6d43-4c55-9a7e-3f0c1d2e9b84")


@pytest.mark.parametrize("method", ["upsert", "delete"])
@pytest.mark.parametrize("scoped", [False, True])
async def test_a_rewrite_of_a_first_scheme_episode_keeps_one_copy(
    method: str, scoped: bool
) -> None:
    inner = open_engine(location=":memory:")
    engine = FailingEngine(inner)
    tenant: dict[str, Any] = {"user_id": "u", "agent_id": "a"} if scoped else {}
    store = QdrantTaskStore(engine=engine, embedder=HashEmbedder(), **tenant)
    try:
        task = Task(instruction="Book a table for two")
        await store.write(Episode(id_="E1", task=task, rollout="booked"))
        # Move it to the id the first scheme gave it, as a store written back then holds it.
        (hit,), _ = inner.scroll(store.collection, Filter(), limit=10)
        inner.delete(store.collection, Filter(must=(HasId((hit.id,)),)))
        legacy = str(uuid.uuid5(_FIRST_SCHEME, task.id_))
        inner.upsert(store.collection, [Point(legacy, {}, {}, hit.payload)])
        assert [e.rollout for e in await store.read_recent(5)] == ["booked"]

        engine.fail_next(method)
        try:
            await store.write(Episode(id_="E1", task=task, rollout="moved"))
        except EpisodexError:
            # A typed error, and the episode as it was.
            assert [e.rollout for e in await store.read_recent(5)] == ["booked"]
        else:
            assert [e.rollout for e in await store.read_recent(5)] == ["moved"]
        assert await store.count() == 1
        # Written again, it is the new episode once, with nothing left behind in the engine.
        await store.write(Episode(id_="E1", task=task, rollout="moved"))
        assert [e.rollout for e in await store.read_recent(5)] == ["moved"]
        assert [e.rollout for e in await store.search("table for two", k=5)] == ["moved"]
        # Removing the tombstone is what failed when the delete did: that point stays, and
        # no read reaches it (above); otherwise nothing but the episode is in the engine.
        assert inner.count(store.collection, Filter()) == (2 if method == "delete" else 1)
    finally:
        store.close()
        inner.close()
