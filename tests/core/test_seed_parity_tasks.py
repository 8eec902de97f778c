"""Task episodes as the original design shaped them: appending stores, seed-style subclasses,
duck-typed stores, the `<task>` layout, and stores scoped by user and agent."""

from __future__ import annotations

import dataclasses
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    BaseMemory,
    BaseMemoryStore,
    ConfigurationError,
    Embedder,
    Episode,
    EpisodeNotFoundError,
    HybridMemory,
    JSONLTaskStore,
    NotSupportedError,
    QdrantTaskStore,
    RecencyMemory,
    ReflectiveMemory,
    SimilarityMemory,
    Task,
    TaskResult,
    ValidationError,
    render_memories,
)

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def attempt(task: Task, n: int, answer: str, **extra: Any) -> Episode:
    return Episode(
        task=task,
        rollout=f"attempt {n}",
        result=TaskResult(task_id=task.id_, content=answer),
        completed_at=T0 + timedelta(minutes=n),
        **extra,
    )


def open_store(kind: str, folder: Path, embedder: Embedder, **tenant: str) -> BaseMemoryStore:
    if kind == "jsonl":
        return JSONLTaskStore(folder, **tenant)  # type: ignore[arg-type]
    if kind == "edge":
        return QdrantTaskStore(path=folder, embedder=embedder, **tenant)  # type: ignore[arg-type]
    return QdrantTaskStore(location=":memory:", embedder=embedder, **tenant)  # type: ignore[arg-type]


def close(store: object) -> None:
    if isinstance(store, JSONLTaskStore | QdrantTaskStore):
        store.close()


@pytest.fixture(params=["jsonl", "edge", "memory"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
) -> Iterator[BaseMemoryStore]:
    s = open_store(request.param, tmp_path, embedder)
    yield s
    close(s)


# -- a store appends ---------------------------------------------------------------------


async def test_a_retry_of_the_same_task_keeps_both_attempts(store: BaseMemoryStore) -> None:
    task = Task(id_="t-miles", instruction="Convert 3 miles to kilometres")
    first = attempt(task, 1, "4.8 km", additional_data={"reflection": "round less"})
    second = attempt(task, 2, "4.83 km")
    await store.write(first)
    await store.write(second)
    assert first.id_ != second.id_
    assert await store.count() == 2
    recent = await store.read_recent(5)
    assert [e.id_ for e in recent] == [second.id_, first.id_]
    assert recent[1].additional_data == {"reflection": "round less"}  # the reflection survives
    hits = await store.search("miles to kilometres", k=5)
    assert {e.id_ for e in hits} == {first.id_, second.id_}

    # Writing the same episode id again replaces that episode, and only that one.
    fixed = second.replace(result=TaskResult(task_id=task.id_, content="4.828 km"))
    await store.write(fixed)
    assert await store.count() == 2
    newest = (await store.read_recent(1))[0]
    assert newest.id_ == second.id_ and str(newest.result) == "4.828 km"


async def test_qdrant_store_replaces_a_point_of_the_first_scheme(
    tmp_path: Path, embedder: Embedder
) -> None:
    # A collection written before episodes were keyed by their own id holds points keyed by
    # the task id; rewriting such an episode must replace it, not duplicate it.
    store = QdrantTaskStore(path=tmp_path, embedder=embedder)
    try:
        task = Task(id_="t-old", instruction="Book a table for two")
        old = attempt(task, 1, "booked")
        await store.write(old)
        store.engine.delete(store.collection, store._scope)  # pyright: ignore[reportPrivateUsage]
        point = store._point(old, "Book a table for two")  # pyright: ignore[reportPrivateUsage]
        legacy_id = str(uuid.uuid5(uuid.UUID("5b0f8a52-6d43-4c55-9a7e-3f0c1d2e9b84"), "t-old"))
        store.engine.upsert(store.collection, [dataclasses.replace(point, id=legacy_id)])
        assert await store.count() == 1
        await store.write(old.replace(result=TaskResult(task_id="t-old", content="moved")))
        assert await store.count() == 1
        assert str((await store.read_recent(1))[0].result) == "moved"
        await store.write(attempt(task, 2, "booked again"))  # a new attempt is kept beside it
        assert await store.count() == 2
    finally:
        store.close()


# -- BaseMemory written the original way ---------------------------------------------------


class SeedMemory(BaseMemory):
    """Implements exactly what the original BaseMemory asked for: recall, record, summary."""

    def __init__(self, store: BaseMemoryStore) -> None:
        self.store = store

    async def recall(self, task: Task) -> str:  # type: ignore[override]
        episodes = await self.store.read_recent(2)
        return "\n".join(e.format() for e in episodes)

    async def record(self, episode: Episode) -> None:
        await self.store.write(episode)

    async def summary(self) -> str:
        return f"SeedMemory with {await self.store.count()} episodes"


async def test_a_seed_style_base_memory_instantiates_and_works(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        memory = SeedMemory(store)
        task = Task(instruction="Convert 3 miles to kilometres")
        await memory.record(attempt(task, 1, "4.83 km"))
        block = await memory.recall(Task(instruction="Convert 5 miles"))
        assert ET.fromstring(block).findtext("task") == "Convert 3 miles to kilometres"
        assert await memory.summary() == "SeedMemory with 1 episodes"
        # It renders its own block, so it cannot be interleaved with others: a clear error.
        with pytest.raises(ValidationError, match="recall"):
            await render_memories([memory], "x")
        with pytest.raises(NotSupportedError, match="retrieve"):
            await memory.retrieve("x")
        with pytest.raises(ConfigurationError, match="retrieve"):
            ReflectiveMemory(store, _llm, recall_with=memory)


async def _llm(prompt: str) -> str:
    return "Check units."


def test_a_base_memory_missing_recall_and_retrieve_fails_at_construction() -> None:
    class Incomplete(BaseMemory):
        async def record(self, episode: Episode) -> None:
            return None

        async def summary(self) -> str:
            return ""

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


# -- BaseMemoryStore: the ABC, the optional calls, duck typing ----------------------------


class ListStore(BaseMemoryStore):
    """The five abstract methods, no more."""

    def __init__(self) -> None:
        self.episodes: list[Episode] = []

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        self.episodes = [e for e in self.episodes if e.id_ != episode.id_] + [episode]

    async def read_recent(self, n: int) -> list[Episode]:
        return sorted(self.episodes, key=lambda e: e.completed_at, reverse=True)[:n]

    async def count(self) -> int:
        return len(self.episodes)

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        words = set(query.lower().split())
        scored = [(len(words & set(str(e.task).lower().split())), e) for e in self.episodes]
        return [e for s, e in sorted(scored, key=lambda p: -p[0]) if s > 0][:k]

    async def summary(self) -> str:
        return f"ListStore: {len(self.episodes)}"


class DuckStore:
    """No base class at all: only the five async methods of the original design."""

    def __init__(self) -> None:
        self.inner = ListStore()

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        await self.inner.write(episode, embedded_text)

    async def read_recent(self, n: int) -> list[Episode]:
        return await self.inner.read_recent(n)

    async def count(self) -> int:
        return await self.inner.count()

    async def search(self, query: str, k: int, **kwargs: Any) -> list[Episode]:
        return await self.inner.search(query, k, **kwargs)

    async def summary(self) -> str:
        return await self.inner.summary()


def test_base_memory_store_is_an_abc_with_the_five_original_methods() -> None:
    assert BaseMemoryStore.__abstractmethods__ == frozenset(
        {"write", "read_recent", "count", "search", "summary"}
    )

    class NoSummary(BaseMemoryStore):
        async def write(self, episode: Episode, embedded_text: str | None = None) -> None: ...
        async def read_recent(self, n: int) -> list[Episode]:
            return []

        async def count(self) -> int:
            return 0

        async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
            return []

    with pytest.raises(TypeError, match="summary"):
        NoSummary()  # type: ignore[abstract]
    assert isinstance(JSONLTaskStore, type) and issubclass(JSONLTaskStore, BaseMemoryStore)
    assert issubclass(QdrantTaskStore, BaseMemoryStore)


async def test_delete_and_update_are_optional_with_a_typed_error() -> None:
    store = ListStore()
    episode = attempt(Task(instruction="x"), 1, "y")
    with pytest.raises(NotSupportedError, match="delete"):
        await store.delete(episode.id_)
    with pytest.raises(NotSupportedError, match="update"):
        await store.update(episode)
    assert isinstance(NotSupportedError("x"), NotImplementedError)


@pytest.mark.parametrize("make", [ListStore, DuckStore], ids=["subclass", "duck"])
async def test_every_strategy_accepts_a_store_with_the_five_methods(make: type[Any]) -> None:
    store = make()
    task = Task(instruction="Convert 3 miles to kilometres")
    memories = [
        RecencyMemory(store, n=2),
        SimilarityMemory(store, k=2),
        HybridMemory(store, n=2, k=2),
        ReflectiveMemory(store, _llm, n=2),
    ]
    for i, memory in enumerate(memories):
        stored = await memory.record(attempt(task, i, f"answer {i}"))
        assert stored is not None
        block = await memory.recall("Convert 5 miles to kilometres")
        assert ET.fromstring(block).findall("episode"), type(memory).__name__
        assert "ListStore" in await memory.summary()
    assert await store.count() == 4
    assert await render_memories(memories[:2], "miles kilometres")


def test_a_store_missing_a_method_is_refused_by_strategies() -> None:
    class NoSearch:
        async def write(self, episode: Episode, embedded_text: str | None = None) -> None: ...
        async def read_recent(self, n: int) -> list[Episode]:
            return []

        async def count(self) -> int:
            return 0

        async def summary(self) -> str:
            return ""

    with pytest.raises(ConfigurationError, match=r"lacks \['search'\]"):
        SimilarityMemory(NoSearch())  # type: ignore[arg-type]


# -- Episode.format as originally laid out --------------------------------------------------


def test_format_keeps_the_include_order_and_shows_the_instruction_as_task() -> None:
    task = Task(id_="t-1", instruction="Convert 3 miles to kilometres")
    ep = attempt(task, 0, "4.83 km", additional_data={"reflection": "Check the unit first."})
    root = ET.fromstring(ep.format(include=["result", "completed_at", "instruction"]))
    assert [c.tag for c in root] == ["result", "completed_at", "task"]
    root = ET.fromstring(ep.format(include=["additional_data", "instruction", "result"]))
    assert [c.tag for c in root] == ["reflection", "task", "result"]
    assert [c.tag for c in ET.fromstring(ep.format())] == [
        "task",
        "result",
        "reflection",
        "completed_at",
    ]
    assert ep.format(include=["result", "result"]).count("<result>") == 1


def test_concat_gives_the_raw_values_one_per_line() -> None:
    task = Task(id_="t-1", instruction="Convert 3 miles to kilometres")
    ep = attempt(task, 0, "a < b", additional_data={"reflection": "Check", "hint": "km"})
    assert ep.format(mode="concat").splitlines() == [
        "Convert 3 miles to kilometres",
        "a < b",
        "Check",
        "km",
        "2024-03-01 08:00:00",
    ]
    assert ep.format(mode="concat", include=["result", "instruction"]) == (
        "a < b\nConvert 3 miles to kilometres"
    )


# -- tenants -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "edge", "memory"])
async def test_task_stores_never_mix_users_or_agents(
    kind: str, tmp_path: Path, embedder: Embedder
) -> None:
    task = Task(id_="t-shared", instruction="Refund order 1234")
    look_alikes = [
        {"user_id": "alice", "agent_id": "support"},
        {"user_id": "Alice", "agent_id": "support"},
        {"user_id": "alice ", "agent_id": "support"},
        {"user_id": "alice", "agent_id": "billing"},
        {"user_id": "alicé", "agent_id": "support"},
    ]
    if kind == "memory":
        # One qdrant-client `:memory:` engine shared by every tenant's store.
        first = QdrantTaskStore(location=":memory:", embedder=embedder)
        stores: list[BaseMemoryStore] = [
            QdrantTaskStore(engine=first.engine, embedder=embedder, **ids)  # type: ignore[arg-type]
            for ids in look_alikes
        ]
        unscoped: BaseMemoryStore = first
    else:
        stores = []
        for ids in look_alikes:
            if kind == "edge" and stores:
                # One Edge folder: the stores share its engine, as one process would.
                engine = stores[0].engine  # type: ignore[attr-defined]
                stores.append(QdrantTaskStore(engine=engine, embedder=embedder, **ids))  # type: ignore[arg-type]
            else:
                stores.append(open_store(kind, tmp_path, embedder, **ids))
        unscoped = (
            JSONLTaskStore(tmp_path)
            if kind == "jsonl"
            else QdrantTaskStore(engine=stores[0].engine, embedder=embedder)  # type: ignore[attr-defined]
        )
    try:
        # Every tenant writes an episode with the SAME episode id and the same task.
        for i, s in enumerate(stores):
            await s.write(
                Episode(
                    id_="e-same",
                    task=task,
                    result=TaskResult(task_id=task.id_, content=f"tenant {i}"),
                    completed_at=T0,
                )
            )
        await unscoped.write(attempt(task, 9, "nobody's"))
        for i, s in enumerate(stores):
            assert await s.count() == 1
            for got in (await s.read_recent(10), await s.search("refund order", k=10)):
                assert [str(e.result) for e in got] == [f"tenant {i}"]
            assert ": 1 episode," in await s.summary()
        assert [str(e.result) for e in await unscoped.read_recent(10)] == ["nobody's"]
        # Deleting or updating in one tenant never reaches another's episode of that id.
        await stores[0].delete("e-same")
        assert await stores[0].count() == 0
        assert all([await s.count() == 1 for s in stores[1:]])
        with pytest.raises(EpisodeNotFoundError):
            await stores[0].update(Episode(id_="e-same", task=task, result=None, completed_at=T0))
        assert await unscoped.count() == 1
    finally:
        for s in [*stores, unscoped]:
            close(s)


async def test_a_jsonl_tenant_file_is_checked_on_open(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path, user_id="alice") as alice:
        await alice.write(attempt(Task(instruction="x"), 1, "y"))
        path = alice.path
    assert path.name != "episodes.jsonl" and path.parent == tmp_path
    # A tenant's file copied under another tenant's name is refused, not read.
    with JSONLTaskStore(tmp_path, user_id="bob") as bob:
        bob_path = bob.path
    bob_path.write_bytes(path.read_bytes())
    with pytest.raises(ValidationError, match="another user_id"):
        JSONLTaskStore(tmp_path, user_id="bob")
    with pytest.raises(ConfigurationError, match="user_id"):
        JSONLTaskStore(tmp_path, user_id=" ")
