from __future__ import annotations

import asyncio
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
from langchain_core.retrievers import BaseRetriever
from langchain_episodex import TaskEpisodeRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

TASKS = [
    ("Convert 3 miles to km", "4.83 km", "alice"),
    ("Convert 10 miles to km", "16.09 km", "alice"),
    ("Convert 5 km to miles", "3.11 miles", "bob"),
    ("Book a table for two", "Booked at 7pm", "alice"),
]


def _episodes() -> list[Episode]:
    out = []
    for instruction, answer, user in TASKS:
        task = Task(instruction=instruction)
        out.append(
            Episode(
                task=task,
                result=TaskResult(task_id=task.id_, content=answer),
                metadata={"user": user},
            )
        )
    return out


async def _write(store: Any) -> None:
    for episode in _episodes():
        await store.write(episode)


_SHARED: dict[str, Any] = {}


def _shared_store() -> QdrantTaskStore:
    # The standard suite builds the retriever from a property, so its store lives at class level.
    if "store" not in _SHARED:
        store = QdrantTaskStore(location=":memory:")
        asyncio.run(_write(store))
        _SHARED["store"] = store
    return _SHARED["store"]


@pytest.fixture(scope="module", autouse=True)
def _close_shared_store() -> Any:
    yield
    if "store" in _SHARED:
        _SHARED.pop("store").close()


class TestTaskEpisodeRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return TaskEpisodeRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": _shared_store()}

    @property
    def retriever_query_example(self) -> str:
        return "convert miles to km"


@pytest.fixture(scope="module")
def store(memory: EpisodicMemory) -> QdrantTaskStore:
    # Shares the module's embedded store folder with the conversation episodes.
    store = QdrantTaskStore(memory=memory)
    asyncio.run(_write(store))
    return store


def test_documents_carry_episode_fields(store: QdrantTaskStore) -> None:
    # An unambiguous query: for "convert 3 miles to km" the dense and BM25 streams swap the
    # two conversions, so their fused scores tie and engines may order the tie either way.
    docs = TaskEpisodeRetriever(store=store, k=2).invoke("book a table for two people")
    assert len(docs) == 2
    top = docs[0]
    assert top.metadata["instruction"] == "Book a table for two"
    assert top.metadata["result"] == "Booked at 7pm"
    assert top.metadata["rank"] == 1 and docs[1].metadata["rank"] == 2
    assert top.id == top.metadata["id"]
    assert "<task>Book a table for two</task>" in top.page_content


async def test_async_filter_and_k(store: QdrantTaskStore) -> None:
    retriever = TaskEpisodeRetriever(store=store, search_options={"filter": {"user": "bob"}})
    docs = await retriever.ainvoke("convert", k=3)
    assert [d.metadata["instruction"] for d in docs] == ["Convert 5 km to miles"]
    sync_docs = retriever.invoke("convert", k=3)
    assert [d.id for d in sync_docs] == [d.id for d in docs]


def test_include_chooses_rendered_fields(store: QdrantTaskStore) -> None:
    docs = TaskEpisodeRetriever(store=store, k=1, include=["instruction"]).invoke("book a table")
    assert docs[0].page_content.count("<task>") == 1
    assert "<result>" not in docs[0].page_content


async def test_jsonl_store_works_too(tmp_path: Any) -> None:
    store = JSONLTaskStore(tmp_path / "episodes.jsonl")
    await _write(store)
    docs = await TaskEpisodeRetriever(store=store, k=1).ainvoke("book a table for two people")
    assert docs[0].metadata["instruction"] == "Book a table for two"


def test_bad_arguments_raise_typed_errors(store: QdrantTaskStore) -> None:
    with pytest.raises(ConfigurationError, match="store"):
        TaskEpisodeRetriever(store="./tasks")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match="unknown search option"):
        TaskEpisodeRetriever(store=store, search_options={"limit": 1})
    with pytest.raises(ConfigurationError, match="unknown episode field"):
        TaskEpisodeRetriever(store=store, include=["answer"])
    retriever = TaskEpisodeRetriever(store=store)
    with pytest.raises(ValidationError, match="k must be"):
        retriever.invoke("convert", k=-1)
    with pytest.raises(ValidationError, match="mode"):
        retriever.invoke("convert", mode="fuzzy")
