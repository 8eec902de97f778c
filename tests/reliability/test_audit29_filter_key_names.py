"""A filter on a field whose name is not a bare word finds it, on every store and engine.

Filters run in the engine on a payload path built from the caller's field names. A name with
a space, `:`, `$`, `*` or an accent outside ASCII words (`{"first name": "Ada"}`) made an
invalid path: Qdrant Edge raised a bare `ValueError` and qdrant-client an `EngineError`, so a
LangGraph `store.search(..., filter=...)` failed as if the engine were down, a task store
disagreed with the JSONL store (which matched), and a `TaskEpisodeRetriever` confined by such
a filter logged an outage and returned nothing. Now every key is quoted in the path, so it is
read as itself; a key the engine cannot quote (one holding `"`) is refused with
`ValidationError` before the engine is asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    Episode,
    EpisodicMemory,
    JSONLTaskStore,
    QdrantTaskStore,
    Task,
    TaskResult,
    ValidationError,
)
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore, TaskEpisodeRetriever

ENGINES = ["edge", "memory"]

# Field names LangGraph users and task metadata really carry, none a bare word of the path.
ODD_NAMES = ["first name", "user:id", "$tag", "*", "e-mail/2", "naïve·key", "it's"]


def _memory(kind: str, path: Path) -> EpisodicMemory:
    options = {"path": path} if kind == "edge" else {"location": ":memory:"}
    return EpisodicMemory(embedder=HashEmbedder(), splade=False, **options)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("kind", ENGINES)
def test_langgraph_store_filters_on_any_field_name(kind: str, tmp_path: Path) -> None:
    memory = _memory(kind, tmp_path / "store")
    try:
        store = EpisodexStore(memory, agent_id="assistant")
        for i, name in enumerate(ODD_NAMES):
            store.put(("alice", "notes"), f"hit-{i}", {name: "wanted", "nested": {name: i}})
            store.put(("alice", "notes"), f"miss-{i}", {name: "other", "nested": {name: -1}})
        for i, name in enumerate(ODD_NAMES):
            found = store.search(("alice",), filter={name: "wanted"})
            assert [item.key for item in found] == [f"hit-{i}"], name
            if name.startswith("$"):
                continue  # {"nested": {"$tag": ...}} is the operator syntax, as in LangGraph
            nested = store.search(("alice",), filter={"nested": {name: {"$gte": i}}})
            assert f"hit-{i}" in {item.key for item in nested}, name
            assert f"miss-{i}" not in {item.key for item in nested}, name
    finally:
        memory.close()


def _task_store(kind: str, tmp_path: Path) -> JSONLTaskStore | QdrantTaskStore:
    if kind == "jsonl":
        return JSONLTaskStore(tmp_path / "tasks")
    if kind == "edge":
        return QdrantTaskStore(path=tmp_path / "engine", embedder=HashEmbedder())
    return QdrantTaskStore(location=":memory:", embedder=HashEmbedder())


def _episode(instruction: str, metadata: dict[str, object]) -> Episode:
    task = Task(instruction=instruction)
    return Episode(
        task=task, result=TaskResult(task_id=task.id_, content="done"), metadata=metadata
    )


@pytest.mark.parametrize("kind", ["jsonl", *ENGINES])
async def test_task_stores_filter_on_any_metadata_key(kind: str, tmp_path: Path) -> None:
    store = _task_store(kind, tmp_path)
    try:
        for name in ODD_NAMES:
            await store.write(_episode("convert miles", {name: "Ada", "team": {name: "core"}}))
            await store.write(_episode("convert miles", {name: "Bob", "team": {name: "ops"}}))
        for name in ODD_NAMES:
            found = await store.search("convert miles", 50, filter={name: "Ada"})
            assert [e.metadata[name] for e in found] == ["Ada"], name
            found = await store.search("convert miles", 50, filter={f"team.{name}": ["core"]})
            assert [e.metadata["team"] for e in found] == [{name: "core"}], name
    finally:
        store.close()


@pytest.mark.parametrize("kind", ENGINES)
async def test_a_key_the_engine_cannot_read_is_refused_as_bad_input(
    kind: str, tmp_path: Path
) -> None:
    store = _task_store(kind, tmp_path)
    try:
        await store.write(_episode("convert miles", {"user": "u1"}))
        with pytest.raises(ValidationError, match="filter key"):
            await store.search("convert miles", 3, filter={'say "hi"': "u1"})
        with pytest.raises(ValidationError, match="filter key"):
            store.check_search_options({"filter": {'say "hi"': "u1"}})
    finally:
        store.close()


@pytest.mark.parametrize("kind", ENGINES)
async def test_a_retriever_confined_by_such_a_key_finds_its_episodes(
    kind: str, tmp_path: Path
) -> None:
    store = _task_store(kind, tmp_path)
    try:
        await store.write(_episode("convert 3 miles to km", {"user id": "alice"}))
        await store.write(_episode("convert 5 miles to km", {"user id": "bob"}))
        retriever = TaskEpisodeRetriever(
            store=store, k=5, search_options={"filter": {"user id": "alice"}}, raise_on_failure=True
        )
        docs = await retriever.ainvoke("convert miles to km")
        assert [d.metadata["metadata"] for d in docs] == [{"user id": "alice"}]
        assert [d.metadata["metadata"] for d in retriever.invoke("convert miles")] == [
            {"user id": "alice"}
        ]
    finally:
        store.close()
