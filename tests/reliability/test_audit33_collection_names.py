"""Collection names that are no plain name: refused before anything is made.

An embedded store makes a folder of each collection inside the store folder, so a collection
name that is a path (`../x`, an absolute path, `a/b`) put a collection outside the folder its
lock covers, and a name of the store's own files (`episodex-collections.json`) turned its
folder map into a folder and left the store unopenable. Such names are refused with
`ConfigurationError` by every store and engine, before the engine opens where it can.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from episodex import (
    ConfigurationError,
    Episode,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    QdrantTaskStore,
    StepLessonMemory,
    Task,
    TaskResult,
    open_engine,
)
from episodex.testing import HashEmbedder


def _write_task(store: QdrantTaskStore) -> None:
    task = Task(instruction="convert 3 miles to km")
    episode = Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km"))
    asyncio.run(store.write(episode))


PATHS = ["../escaped", "a/b", "a\\b", ".", "..", "x\x00y", "tab\there"]
EMBEDDED_ONLY = ["episodex-collections.json", ".episodex.lock", ".hidden"]


@pytest.mark.parametrize("name", [*PATHS, *EMBEDDED_ONLY, "<absolute>"])
def test_a_task_store_refuses_a_collection_name_that_is_no_plain_name(
    tmp_path: Path, name: str
) -> None:
    if name == "<absolute>":
        name = str(tmp_path / "elsewhere")
    folder = tmp_path / "store"
    with pytest.raises(ConfigurationError, match="collection name"):
        QdrantTaskStore(path=folder, embedder=HashEmbedder(), collection=name)
    # Refused before the engine opened: nothing was made, here or anywhere else.
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # A correct open of the same folder works, and so does the store in it.
    store = QdrantTaskStore(path=folder, embedder=HashEmbedder(), collection="tasks")
    try:
        _write_task(store)
        assert asyncio.run(store.count()) == 1
    finally:
        store.close()


@pytest.mark.parametrize("name", [*PATHS, *EMBEDDED_ONLY])
def test_stores_on_an_open_embedded_engine_refuse_such_names_and_leave_it_working(
    tmp_path: Path, name: str
) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        for make in (
            lambda: QdrantTaskStore(memory=memory, collection=name),
            lambda: StepLessonMemory(memory.engine, HashEmbedder(), collection=name),
            lambda: ItemStore(memory.engine, HashEmbedder(), collection=name),
        ):
            with pytest.raises(ConfigurationError, match="collection name"):
                make()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
        assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [
            ".episodex.lock",
            "episodes",
        ]
        items = ItemStore(memory.engine, HashEmbedder(), collection="items")
        items.write([ItemPut(ItemRef("u", "a", ("notes",), "k"), {"text": "hello"}, "hello")])
        assert memory.store.count(user_id="u", agent_id="a") == 0
    finally:
        memory.close()
    again = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    again.close()


@pytest.mark.parametrize("name", PATHS)
def test_every_engine_refuses_a_collection_name_that_is_a_path(name: str) -> None:
    engine = open_engine(location=":memory:")
    try:
        with pytest.raises(ConfigurationError, match="collection name"):
            QdrantTaskStore(engine=engine, embedder=HashEmbedder(), collection=name)
        with pytest.raises(ConfigurationError, match="collection name"):
            ItemStore(engine, HashEmbedder(), collection=name)
        # A name a server takes stays taken.
        store = QdrantTaskStore(engine=engine, embedder=HashEmbedder(), collection="my tasks")
        _write_task(store)
        assert asyncio.run(store.count()) == 1
    finally:
        engine.close()
