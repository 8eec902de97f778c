"""The BM25 settings a store records when it makes its collection, and opening it with others.

Stored BM25 vectors carry the term weights of the settings they were written with. A store
opened without `bm25=` reads the collection's own settings, so what it writes scores exactly as
what was there; one opened with a `Bm25Encoder` of other settings is refused with
`EmbedderMismatchError` naming them, before anything is written. Every store, both engines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import BACKENDS, drop_server_collections, engine_options
from episodex import (
    Bm25Encoder,
    EmbedderMismatchError,
    Engine,
    Episode,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    QdrantTaskStore,
    Task,
    TaskResult,
    open_engine,
)
from episodex.plan import Filter, Search, Stream
from episodex.testing import HashEmbedder

# A repeated term in a text longer than the custom average length: k, b and avg_len all change
# its weight.
TEXT = "apple apple apple banana cherry date elderberry fig grape"
CUSTOM = {"k": 2.0, "b": 0.3, "avg_len": 4.0}


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    path, options = engine_options(request.param, tmp_path)
    opened = open_engine(path=str(path) if path else None, **options)
    yield opened
    drop_server_collections(opened)
    opened.close()


async def _episodes(engine: Engine, bm25: Bm25Encoder | None, n: int) -> tuple[str, Any]:
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), bm25=bm25, splade=False)
    await memory.memorize(
        short_summary=TEXT,
        long_summary=TEXT,
        user_id="u",
        agent_id="a",
        conversation_id=f"c{n}",
    )
    return memory.store.collection, memory.store.bm25


async def _tasks(engine: Engine, bm25: Bm25Encoder | None, n: int) -> tuple[str, Any]:
    store = QdrantTaskStore(engine=engine, embedder=HashEmbedder(), bm25=bm25)
    task = Task(id_=f"t{n}", instruction=TEXT)
    await store.write(
        Episode(id_=f"e{n}", task=task, result=TaskResult(task_id=task.id_, content="done")),
        embedded_text=TEXT,
    )
    return store.collection, store.bm25


async def _items(engine: Engine, bm25: Bm25Encoder | None, n: int) -> tuple[str, Any]:
    store = ItemStore(engine, HashEmbedder(), bm25=bm25)
    store.write([ItemPut(ItemRef("u", "a", ("ns",), f"k{n}"), {"n": n}, text=TEXT)])
    return store.collection, store.bm25


Opener = Callable[[Engine, Bm25Encoder | None, int], Any]
STORES: list[Any] = [
    pytest.param(_episodes, id="episodes"),
    pytest.param(_tasks, id="tasks"),
    pytest.param(_items, id="items"),
]


def _bm25_scores(engine: Engine, collection: str) -> list[float]:
    query = Bm25Encoder().query("apple")
    search = Search(Stream("bm25", query, 10), Filter(), limit=10, with_payload=False)
    return [hit.score for hit in engine.query(collection, [search])[0]]


@pytest.mark.parametrize("write", STORES)
async def test_a_store_opened_without_bm25_reads_the_collections_settings(
    engine: Engine, write: Opener
) -> None:
    await write(engine, Bm25Encoder(**CUSTOM), 1)
    collection, bm25 = await write(engine, None, 2)
    # The text written with the stored settings weighs as the one written when it was made.
    first, second = _bm25_scores(engine, collection)
    assert first == pytest.approx(second)  # pyright: ignore[reportUnknownMemberType]
    assert bm25.config == {**CUSTOM, "language": "english"}


@pytest.mark.parametrize("write", STORES)
async def test_a_store_opened_with_other_bm25_settings_is_refused(
    engine: Engine, write: Opener
) -> None:
    collection, _ = await write(engine, Bm25Encoder(**CUSTOM), 1)
    for other in (Bm25Encoder(), Bm25Encoder(k=2.0, b=0.3, avg_len=5.0)):
        with pytest.raises(EmbedderMismatchError, match=r"BM25 .*avg_len.*Bm25Encoder\(k=2\.0"):
            await write(engine, other, 2)
    assert len(_bm25_scores(engine, collection)) == 1  # nothing written by a refused store
    # The same settings, given again, open it.
    await write(engine, Bm25Encoder(k=2, b=0.3, avg_len=4), 3)
    assert len(_bm25_scores(engine, collection)) == 2


async def test_a_reindex_changes_an_episode_collections_bm25_settings(engine: Engine) -> None:
    await _episodes(engine, Bm25Encoder(**CUSTOM), 1)
    memory = EpisodicMemory(
        engine=engine, embedder=HashEmbedder(), bm25=Bm25Encoder(), splade=False, for_reindex=True
    )
    with pytest.raises(EmbedderMismatchError, match="BM25"):
        await memory.memorize(
            short_summary=TEXT, long_summary=TEXT, user_id="u", agent_id="a", conversation_id="c"
        )
    await memory.reindex()
    collection, bm25 = await _episodes(engine, None, 2)
    assert bm25.config == Bm25Encoder().config
    first, second = _bm25_scores(engine, collection)
    assert first == pytest.approx(second)  # pyright: ignore[reportUnknownMemberType]
