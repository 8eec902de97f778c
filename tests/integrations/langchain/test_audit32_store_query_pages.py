"""Pages of a query search are slices of one ranking, as in LangGraph's own `InMemoryStore`.

`search(prefix, query=..., limit=10, offset=n)` fused the dense and BM25 searches with each
taking its `max(100, offset + limit)` best, so past the hundredth hit every page was ranked
from deeper lists than the page before it. A user paging through 150 memories ten at a time
was shown some twice and never shown others (on Qdrant Edge, about one in six), where
`InMemoryStore` hands every item once. Now the ranking is cut into stretches of 100 (the
fusion depth), each fused at that depth among the items the stretches before it left, so a
page is the same slice of it whatever its limit and offset, and its scores still descend.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

WORDS = ["apple", "river", "stone", "cloud", "tiger", "piano", "lemon", "forest", "candle"]
COUNT = 150
QUERIES = ["apple river", "note", "tiger piano forest"]


@pytest.fixture(params=["edge", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodexStore]:
    if request.param == "edge":
        memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    else:
        memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        yield EpisodexStore(memory, agent_id="assistant")
    finally:
        memory.close()


def fill(store: BaseStore) -> None:
    store.batch(
        [
            PutOp(
                ("alice", "notes"), f"k{i}", {"text": f"{WORDS[i % 9]} {WORDS[i * 4 % 9]} note {i}"}
            )
            for i in range(COUNT)
        ]
    )


def paged(store: BaseStore, query: str, size: int) -> list[str]:
    keys: list[str] = []
    for offset in range(0, COUNT + size, size):
        keys += [
            hit.key for hit in store.search(("alice",), query=query, limit=size, offset=offset)
        ]
    return keys


def test_query_pages_hand_every_item_once(store: EpisodexStore) -> None:
    reference = InMemoryStore()
    fill(store)
    fill(reference)
    everything = {item.key for item in reference.search(("alice",), limit=COUNT)}
    for query in QUERIES:
        keys = paged(store, query, 10)
        assert len(keys) == len(set(keys)) == COUNT, query
        assert set(keys) == everything == set(paged(reference, query, 10))


def test_query_pages_are_slices_of_one_ranking(store: EpisodexStore) -> None:
    fill(store)
    for query in QUERIES:
        whole = store.search(("alice",), query=query, limit=COUNT)
        assert [hit.key for hit in whole] == paged(store, query, 10) == paged(store, query, 35)
        scores = [hit.score or 0.0 for hit in whole]
        assert all(score > 0 for score in scores)
        assert scores == sorted(scores, reverse=True), query
        # The first page is as before: the best hits of the two searches fused at depth 100.
        assert [h.key for h in store.search(("alice",), query=query, limit=5)] == [
            h.key for h in whole[:5]
        ]
