"""`EpisodexStore` honours LangGraph's `BaseStore` contract on both engines, sync and async.

langgraph ships conformance tests for checkpointers only (langgraph-checkpoint-conformance),
none for stores, so this is the store contract: put/get/search/delete/list_namespaces, the
batch semantics of LangGraph's own InMemoryStore, tenant isolation, reopening, bad input.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    EpisodicMemory,
    SyncEpisodicMemory,
    ValidationError,
)
from langchain_episodex import EpisodexStore
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

ENGINES = ["edge", "memory"]


def open_memory(kind: str, path: Path) -> EpisodicMemory:
    return EpisodicMemory(path=path) if kind == "edge" else EpisodicMemory(location=":memory:")


@pytest.fixture(params=ENGINES)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = open_memory(str(request.param), tmp_path / "store")
    yield mem
    mem.close()


@pytest.fixture
def store(memory: EpisodicMemory) -> EpisodexStore:
    return EpisodexStore(memory, agent_id="assistant", index={"fields": ["text"]})


def seed(store: EpisodexStore) -> None:
    store.put(("alice", "food"), "diet", {"text": "Alice is vegetarian.", "rank": 1})
    store.put(("alice", "food"), "allergy", {"text": "Allergic to peanuts.", "rank": 2})
    store.put(("alice", "travel"), "seat", {"text": "Prefers an aisle seat.", "rank": 3})
    store.put(("alice", "travel", "2026"), "trip", {"text": "Oslo in March.", "rank": 4})


# -- put / get / delete ---------------------------------------------------------------------


def test_put_get_round_trip_and_update_keeps_created_at(store: EpisodexStore) -> None:
    store.put(("alice", "food"), "diet", {"text": "Alice is vegetarian.", "tags": ["a", 1]})
    first = store.get(("alice", "food"), "diet")
    assert first is not None
    assert first.value == {"text": "Alice is vegetarian.", "tags": ["a", 1]}
    assert (first.namespace, first.key) == (("alice", "food"), "diet")
    store.put(("alice", "food"), "diet", {"text": "Alice is vegan now."})
    second = store.get(("alice", "food"), "diet")
    assert second is not None
    assert second.value == {"text": "Alice is vegan now."}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert store.get(("alice", "food"), "missing") is None
    assert store.get(("alice", "other"), "diet") is None


def test_delete_removes_only_that_item(store: EpisodexStore) -> None:
    seed(store)
    store.delete(("alice", "food"), "diet")
    assert store.get(("alice", "food"), "diet") is None
    allergy = store.get(("alice", "food"), "allergy")
    assert allergy is not None and allergy.value["rank"] == 2
    store.delete(("alice", "food"), "never-stored")  # not an error
    assert store.items.count(user_id="alice", agent_id="assistant") == 3


# -- search ---------------------------------------------------------------------------------


def test_search_without_query_is_newest_first_with_limit_and_offset(store: EpisodexStore) -> None:
    seed(store)
    keys = [item.key for item in store.search(("alice",), limit=10)]
    assert keys == ["trip", "seat", "allergy", "diet"]
    assert [i.key for i in store.search(("alice",), limit=2, offset=1)] == ["seat", "allergy"]
    assert [i.key for i in store.search(("alice", "travel"))] == ["trip", "seat"]
    assert [i.key for i in store.search(("alice", "travel", "2026"))] == ["trip"]
    assert store.search(("alice",), limit=0) == []
    assert all(item.score is None for item in store.search(("alice",)))


def test_search_filters_run_with_every_operator(store: EpisodexStore) -> None:
    seed(store)
    store.put(("alice", "misc"), "nested", {"text": "x", "meta": {"lang": "en", "n": 2.5}})

    def keys(flt: dict[str, Any]) -> set[str]:
        return {item.key for item in store.search(("alice",), filter=flt)}

    assert keys({"rank": 2}) == {"allergy"}
    assert keys({"rank": {"$eq": 2.0}}) == {"allergy"}
    assert keys({"rank": {"$ne": 2}}) == {"diet", "seat", "trip", "nested"}
    assert keys({"rank": {"$gt": 2}}) == {"seat", "trip"}
    assert keys({"rank": {"$gte": 2, "$lt": 4}}) == {"allergy", "seat"}
    assert keys({"rank": {"$lte": 1}}) == {"diet"}
    assert keys({"text": "Oslo in March."}) == {"trip"}
    assert keys({"meta": {"lang": "en"}}) == {"nested"}
    assert keys({"meta": {"n": {"$gt": 2}}}) == {"nested"}
    with pytest.raises(ValidationError, match="unknown operator"):
        store.search(("alice",), filter={"rank": {"$in": [1, 2]}})
    with pytest.raises(ValidationError, match="only a string, boolean or number"):
        store.search(("alice",), filter={"rank": [1, 2]})


def test_query_search_ranks_by_hybrid_recall_and_skips_unindexed(store: EpisodexStore) -> None:
    seed(store)
    store.put(("alice", "food"), "secret", {"text": "vegetarian lasagne recipe"}, index=False)
    hits = store.search(("alice",), query="is she vegetarian?", limit=3)
    assert hits[0].key == "diet"
    assert hits[0].score is not None and hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score or 0.0 for h in hits), reverse=True)
    # The unindexed item is never ranked by a query, but filters and listings still find it.
    assert "secret" not in {h.key for h in store.search(("alice",), query="lasagne recipe")}
    assert [
        h.key for h in store.search(("alice",), filter={"text": "vegetarian lasagne recipe"})
    ] == ["secret"]
    # A query inside a filter and a prefix: only what passes both is ranked.
    filtered = store.search(("alice", "travel"), query="vegetarian", filter={"rank": 3})
    assert [h.key for h in filtered] == ["seat"]
    second_page = store.search(("alice",), query="is she vegetarian?", limit=1, offset=1)
    assert second_page[0].key == hits[1].key


def test_index_fields_choose_what_is_embedded(memory: EpisodicMemory) -> None:
    store = EpisodexStore(memory, index={"fields": ["title"]})
    store.put(("u1", "notes"), "n1", {"title": "kayak trip", "body": "quantum chromodynamics"})
    store.put(("u1", "notes"), "n2", {"title": "groceries", "body": "kayak paddles"})
    # Every indexed item has a dense vector, so all rank; only n1's title says "kayak".
    assert store.search(("u1",), query="kayak")[0].key == "n1"
    # A per-put list of paths overrides the store's fields.
    store.put(("u1", "notes"), "n3", {"title": "x", "body": "zebra crossing"}, index=["body"])
    assert store.search(("u1",), query="zebra crossing")[0].key == "n3"
    whole = EpisodexStore(memory, agent_id="whole")  # default: the whole value is indexed
    whole.put(("u1", "notes"), "n4", {"title": "x", "body": "zebra crossing"})
    assert [h.key for h in whole.search(("u1",), query="zebra crossing")] == ["n4"]


def test_index_config_refuses_another_embedder(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match="memory's embedder"):
        EpisodexStore(memory, index={"embed": "openai:text-embedding-3-small", "dims": 384})
    with pytest.raises(ConfigurationError, match="dims"):
        EpisodexStore(memory, index={"dims": 1536, "fields": ["text"]})


# -- list_namespaces ------------------------------------------------------------------------


def test_list_namespaces_prefix_suffix_depth_and_pages(store: EpisodexStore) -> None:
    seed(store)
    store.put(("alice", "work", "2026"), "k", {"text": "x"})
    everything = [
        ("alice", "food"),
        ("alice", "travel"),
        ("alice", "travel", "2026"),
        ("alice", "work", "2026"),
    ]
    assert store.list_namespaces(prefix=("alice",)) == everything
    assert store.list_namespaces(prefix=("alice", "travel")) == everything[1:3]
    assert store.list_namespaces(prefix=("alice",), suffix=("2026",)) == everything[2:]
    assert store.list_namespaces(prefix=("alice", "*", "2026")) == everything[2:]
    assert store.list_namespaces(prefix=("alice",), max_depth=2) == [
        ("alice", "food"),
        ("alice", "travel"),
        ("alice", "work"),
    ]
    assert store.list_namespaces(prefix=("alice",), limit=2, offset=1) == everything[1:3]
    assert store.list_namespaces(prefix=("alice", "nothing")) == []


# -- batch semantics ------------------------------------------------------------------------


def test_batch_reads_see_the_store_before_its_writes_and_the_last_write_wins(
    store: EpisodexStore,
) -> None:
    store.put(("alice", "a"), "k", {"text": "old"})
    results = store.batch(
        [
            PutOp(("alice", "a"), "k", {"text": "new"}),
            GetOp(("alice", "a"), "k"),
            PutOp(("alice", "a"), "gone", {"text": "x"}),
            PutOp(("alice", "a"), "gone", None),
            PutOp(("alice", "a"), "back", None),
            PutOp(("alice", "a"), "back", {"text": "here"}),
            SearchOp(("alice",)),
            ListNamespacesOp((MatchCondition("prefix", ("alice",)),)),
        ]
    )
    got = results[1]
    assert got is not None and not isinstance(got, list) and got.value == {"text": "old"}
    assert results[6] is not None and [i.key for i in results[6]] == ["k"]  # type: ignore[union-attr]
    assert results[7] == [("alice", "a")]
    assert results[0] is None and results[2] is None
    after = store.get(("alice", "a"), "k")
    assert after is not None and after.value == {"text": "new"}
    assert store.get(("alice", "a"), "gone") is None
    back = store.get(("alice", "a"), "back")
    assert back is not None and back.value == {"text": "here"}


def test_a_bad_put_leaves_the_whole_batch_unwritten(store: EpisodexStore) -> None:
    store.put(("alice", "a"), "k", {"text": "kept"})
    with pytest.raises(ValidationError, match="NaN"):
        store.batch(
            [
                PutOp(("alice", "a"), "k", {"text": "changed"}),
                PutOp(("alice", "a"), "bad", {"x": math.nan}),
            ]
        )
    kept = store.get(("alice", "a"), "k")
    assert kept is not None and kept.value == {"text": "kept"}
    assert store.get(("alice", "a"), "bad") is None


def test_ttl_is_refused_and_nothing_is_written(store: EpisodexStore) -> None:
    assert store.supports_ttl is False
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("alice", "a"), "k", {"text": "x"}, ttl=5)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.batch([PutOp(("alice", "a"), "k", {"text": "x"}, ttl=5.0)])
    assert store.get(("alice", "a"), "k") is None
    store.put(("alice", "a"), "k", {"text": "x"}, ttl=None)  # None means "no TTL"
    assert store.get(("alice", "a"), "k", refresh_ttl=True) is not None


# -- isolation ------------------------------------------------------------------------------


def test_users_never_see_each_other(store: EpisodexStore, memory: EpisodicMemory) -> None:
    store.put(("alice", "prefs"), "colour", {"text": "Alice likes green."})
    store.put(("bob", "prefs"), "colour", {"text": "Bob likes red."})
    alice = store.get(("alice", "prefs"), "colour")
    assert alice is not None and alice.value["text"] == "Alice likes green."
    assert [i.value["text"] for i in store.search(("bob",), query="green")] == ["Bob likes red."]
    assert store.list_namespaces(prefix=("bob",)) == [("bob", "prefs")]
    # Searches and listings that would span users are refused, not answered.
    for call in (
        lambda: store.search(()),
        lambda: store.search(("*", "prefs")),
        lambda: store.list_namespaces(),
        lambda: store.list_namespaces(suffix=("prefs",)),
    ):
        with pytest.raises(ValidationError, match="does not name a user"):
            call()
    # Another agent on the same memory has its own items.
    other = EpisodexStore(memory, agent_id="other-agent")
    assert other.get(("alice", "prefs"), "colour") is None
    assert other.search(("alice",)) == []
    # The user may sit at another position, or be fixed for the whole store.
    second = EpisodexStore(memory, agent_id="second", user_position=1)
    second.put(("memories", "carol"), "k", {"text": "Carol"})
    assert second.items.count(user_id="carol", agent_id="second") == 1
    fixed = EpisodexStore(memory, agent_id="fixed", user_id="dave")
    fixed.put(("notes",), "k", {"text": "Dave"})
    assert [i.key for i in fixed.search(())] == ["k"]
    assert fixed.items.count(user_id="dave", agent_id="fixed") == 1


# -- async ----------------------------------------------------------------------------------


async def test_async_methods(store: EpisodexStore) -> None:
    await store.aput(("alice", "food"), "diet", {"text": "Alice is vegetarian."})
    await store.aput(("alice", "travel"), "seat", {"text": "Prefers an aisle seat."})
    item = await store.aget(("alice", "food"), "diet")
    assert item is not None and item.value == {"text": "Alice is vegetarian."}
    hits = await store.asearch(("alice",), query="aisle seat", limit=1)
    assert [h.key for h in hits] == ["seat"]
    assert await store.alist_namespaces(prefix=("alice",), max_depth=2) == [
        ("alice", "food"),
        ("alice", "travel"),
    ]
    await store.adelete(("alice", "food"), "diet")
    assert await store.aget(("alice", "food"), "diet") is None
    with pytest.raises(NotImplementedError):
        await store.aput(("alice", "a"), "k", {"text": "x"}, ttl=1)


# -- persistence ----------------------------------------------------------------------------


def test_items_survive_reopening_the_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with SyncEpisodicMemory(path) as memory:  # the sync twin is accepted too
        EpisodexStore(memory, agent_id="a").put(("alice", "food"), "diet", {"text": "vegetarian"})
    memory = EpisodicMemory(path=path)
    try:
        store = EpisodexStore(memory, agent_id="a")
        item = store.get(("alice", "food"), "diet")
        assert item is not None and item.value == {"text": "vegetarian"}
        assert [h.key for h in store.search(("alice",), query="vegetarian")] == ["diet"]
        # Episodes live beside the items in the same store, untouched.
        assert memory.store.count(user_id="alice", agent_id="a") == 0
    finally:
        memory.close()
