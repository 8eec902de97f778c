"""A `HybridMemory` confined by a `search_kwargs` filter recalls only episodes that pass it.

The filter reached the similarity half (`store.search`) only; the recency half read the
store's latest episodes whoever they belonged to. So `HybridMemory(store,
search_kwargs={"filter": {"user": "alice"}})` over a shared store put Bob's latest task, and
its result, in Alice's prompt (and so did a `ReflectiveMemory` recalling with it). Now the
recent episodes are read under the same filter (`read_recent(n, filter=...)` on both
bundled stores), and a store whose `read_recent` cannot take one is refused when the memory
is made, rather than recalled from unfiltered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    Episode,
    HybridMemory,
    JSONLTaskStore,
    QdrantTaskStore,
    ReflectiveMemory,
    Task,
    TaskResult,
)
from episodex.plan import Filter, Match
from episodex.testing import HashEmbedder

SECRET = "Bob's bank PIN is 4421"


def _store(kind: str, tmp_path: Path) -> JSONLTaskStore | QdrantTaskStore:
    if kind == "jsonl":
        return JSONLTaskStore(tmp_path / "tasks")
    if kind == "edge":
        return QdrantTaskStore(path=tmp_path / "engine", embedder=HashEmbedder())
    return QdrantTaskStore(location=":memory:", embedder=HashEmbedder())


async def _fill(store: JSONLTaskStore | QdrantTaskStore) -> None:
    rows = [
        ("alice", "Convert 3 miles to km", "4.83 km"),
        ("alice", "Convert 10 miles to km", "16.09 km"),
        ("bob", "Remember my PIN", SECRET),  # the latest episode of all
    ]
    for user, instruction, result in rows:
        task = Task(instruction=instruction)
        await store.write(
            Episode(
                task=task,
                result=TaskResult(task_id=task.id_, content=result),
                metadata={"user": user},
            )
        )


async def _answer(prompt: str) -> str:
    return "Check the units."


@pytest.mark.parametrize("kind", ["jsonl", "edge", "memory"])
async def test_the_recent_half_is_filtered_too(kind: str, tmp_path: Path) -> None:
    store = _store(kind, tmp_path)
    try:
        await _fill(store)
        hybrid = HybridMemory(store, n=3, k=3, search_kwargs={"filter": {"user": "alice"}})
        episodes = await hybrid.retrieve("Convert 5 miles to km")
        assert sorted(e.metadata["user"] for e in episodes) == ["alice", "alice"]
        assert SECRET not in await hybrid.recall("Convert 5 miles to km")
        reflective = ReflectiveMemory(store, _answer, recall_with=hybrid)
        assert SECRET not in await reflective.recall("Convert 5 miles to km")
        # Unfiltered, the latest episode of the store is recalled as before.
        everyone = HybridMemory(store, n=3, k=3)
        assert SECRET in await everyone.recall("Convert 5 miles to km")
        # Newest first among the filtered ones, as read_recent always was.
        recent = await store.read_recent(1, filter={"user": "alice"})
        assert [e.task.instruction for e in recent] == ["Convert 10 miles to km"]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["edge", "memory"])
async def test_a_plan_filter_confines_the_recent_half_of_a_qdrant_store(
    kind: str, tmp_path: Path
) -> None:
    store = _store(kind, tmp_path)
    try:
        await _fill(store)
        only_alice = Filter(must=(Match("metadata.user", "alice"),))
        hybrid = HybridMemory(store, n=3, k=3, search_kwargs={"filter": only_alice})
        assert SECRET not in await hybrid.recall("Convert 5 miles to km")
    finally:
        store.close()


class _NoFilterStore:
    """A duck-typed task store whose `read_recent` takes no filter."""

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        return None

    async def read_recent(self, n: int) -> list[Episode]:
        return []

    async def count(self) -> int:
        return 0

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        return []

    async def summary(self) -> str:
        return "empty"


def test_a_store_that_cannot_filter_its_recent_episodes_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="read_recent"):
        HybridMemory(_NoFilterStore(), search_kwargs={"filter": {"user": "alice"}})
    HybridMemory(_NoFilterStore())  # no filter: nothing to confine
    HybridMemory(_NoFilterStore(), search_kwargs={"filter": None})
