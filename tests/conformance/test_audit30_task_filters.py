"""A task-store metadata filter answers alike on every task store (JSONL is the reference).

The Qdrant stores build an engine path from each filter key. A key holding brackets
(`{"tags[]": "x"}`, `{"a[0]": "x"}`) was left bare, so the engine read it as the elements of
the list `a`, not as that key: JSONL found the episode holding the key, Qdrant the one holding
the list. A key with a backslash made Qdrant Edge raise a bare `ValueError` while qdrant-client
and JSONL matched, and a key with `"` or an integer beyond 64 bits was refused by Qdrant and
answered by JSONL. Now each key is the key itself on every store, and a filter no engine can
run is refused with `ValidationError` by every store, before anything is read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
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

from .backends import BACKENDS, drop_server_collections, engine_options

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)

# Episode id -> its metadata; every episode holds the words of QUERY.
METADATA: dict[str, dict[str, Any]] = {
    "list": {"a": ["x", "y"]},
    "nested": {"a": {"b": "x"}},
    "list-of-objects": {"a": [{"b": "x"}]},
    "list-of-lists": {"a": [["x"], "q"]},
    "bracket-key": {"a[]": "x"},
    "index-key": {"a[0]": "x"},
    "dotted-key": {"a.b": "x"},
    "big": {"n": 2**53},
    "big-plus-one": {"n": 2**53 + 1},
    "int64-max": {"n": 2**63 - 1},
    "true": {"n": True},
    "one": {"n": 1},
    "one-float": {"n": 1.0},
    "ints": {"n": [1, 2]},
    "string-one": {"n": "1"},
    "none": {"a": None},
    "empty-object": {"a": {}},
    "spaces-quotes": {"a": "x y", "first name": "Bo \"q\" 'z'"},
    "unicode": {"a": "Ünï"},
}

QUERY = "convert the report"

# Filter -> the episodes it keeps (what the JSONL store answers).
EXPECTED: list[tuple[Mapping[str, Any], list[str]]] = [
    ({"a": "x"}, ["list"]),
    ({"a": ["x", "nothing"]}, ["list"]),
    ({"a.b": "x"}, ["nested"]),
    ({"a.b": ["x"]}, ["nested"]),
    ({"a[]": "x"}, ["bracket-key"]),
    ({"a[]": ["x"]}, ["bracket-key"]),
    ({"a[0]": "x"}, ["index-key"]),
    ({"a[1]": "y"}, []),
    ({"a[].b": "x"}, []),
    ({"n": 2**53}, ["big"]),
    ({"n": 2**53 + 1}, ["big-plus-one"]),
    ({"n": 2**63 - 1}, ["int64-max"]),
    ({"n": 1}, ["ints", "one"]),
    ({"n": 2}, ["ints"]),
    ({"n": "1"}, ["string-one"]),
    ({"a": "x y"}, ["spaces-quotes"]),
    ({"first name": "Bo \"q\" 'z'"}, ["spaces-quotes"]),
    ({"a": "Ünï"}, ["unicode"]),
    ({"a": "ünï"}, []),
]

# Filters no engine can run: refused by every store.
REFUSED: list[Mapping[str, Any]] = [
    {'say "hi"': "x"},
    {"a\\b": "x"},
    {"run.a\\b": "x"},
    {"n": 2**64},
    {"n": -(2**63) - 1},
    {"n": True},
    {"a": None},
    {"a": {}},
    {"a": []},
]


def _episode(i: int, id_: str, metadata: dict[str, Any]) -> Episode:
    task = Task(id_=f"task-{id_}", instruction=f"{QUERY} number {i}")
    return Episode(
        id_=id_,
        task=task,
        result=TaskResult(task_id=task.id_, content="done"),
        metadata=metadata,
        completed_at=T0 + timedelta(minutes=i),
    )


@pytest.fixture(params=["jsonl", *BACKENDS])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[JSONLTaskStore | QdrantTaskStore]:
    kind: str = request.param
    if kind == "jsonl":
        opened: JSONLTaskStore | QdrantTaskStore = JSONLTaskStore(tmp_path / "tasks")
    else:
        path, options = engine_options(kind, tmp_path)
        opened = QdrantTaskStore(
            path=None if path is None else str(path), embedder=HashEmbedder(), **options
        )
    for i, (id_, metadata) in enumerate(METADATA.items()):
        await opened.write(_episode(i, id_, metadata))
    yield opened
    if isinstance(opened, QdrantTaskStore):
        drop_server_collections(opened.engine)
    opened.close()


async def test_filters_answer_as_the_jsonl_store(store: JSONLTaskStore | QdrantTaskStore) -> None:
    for flt, expected in EXPECTED:
        found = await store.search(QUERY, k=50, filter=flt)
        assert sorted(e.id_ for e in found) == sorted(expected), flt
        recent = await store.read_recent(50, filter=flt)
        assert sorted(e.id_ for e in recent) == sorted(expected), flt


async def test_filters_no_engine_can_run_are_refused_by_every_store(
    store: JSONLTaskStore | QdrantTaskStore,
) -> None:
    before = await store.count()
    for flt in REFUSED:
        with pytest.raises(ValidationError, match="filter"):
            await store.search(QUERY, k=5, filter=flt)
        with pytest.raises(ValidationError, match="filter"):
            await store.read_recent(5, filter=flt)
        with pytest.raises(ValidationError, match="filter"):
            store.check_search_options({"filter": flt})
    assert await store.count() == before


async def test_a_retriever_confined_by_a_bracket_key_finds_its_episodes(
    store: JSONLTaskStore | QdrantTaskStore,
) -> None:
    retriever = TaskEpisodeRetriever(
        store=store, k=50, search_options={"filter": {"a[]": "x"}}, raise_on_failure=True
    )
    assert [d.id for d in await retriever.ainvoke(QUERY)] == ["bracket-key"]
    # A key the engine cannot match is refused when the retriever is made (it would fail
    # every call).
    with pytest.raises(ConfigurationError, match="filter"):
        TaskEpisodeRetriever(
            store=store, k=5, search_options={"filter": {"a\\b": "x"}}, raise_on_failure=True
        )


@pytest.mark.parametrize("kind", BACKENDS)
def test_an_item_filter_on_a_backslash_key_is_refused_on_every_engine(
    kind: str, tmp_path: Path
) -> None:
    path, options = engine_options(kind, tmp_path)
    memory = EpisodicMemory(
        path=None if path is None else str(path), embedder=HashEmbedder(), splade=False, **options
    )
    try:
        store = EpisodexStore(memory, agent_id="assistant")
        store.put(("alice",), "k1", {"a\\b": "x", "nested": {"a\\b": 1}})
        for flt in ({"a\\b": "x"}, {"nested": {"a\\b": {"$gte": 1}}}):
            with pytest.raises(ValidationError, match="backslash"):
                store.search(("alice",), filter=flt)
        assert [item.key for item in store.search(("alice",))] == ["k1"]
    finally:
        drop_server_collections(memory.engine)
        memory.close()
