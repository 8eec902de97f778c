"""Operations handed to `EpisodexStore.batch` with a namespace of the wrong shape are refused.

LangGraph's ops are plain named tuples, and `batch`/`abatch` take them from any caller. A
`PutOp` whose namespace was a list raised `TypeError: unhashable type` (while a `GetOp` or
`SearchOp` with the same list worked), a dict or None namespace raised `KeyError`/`TypeError`,
and a `list_namespaces` condition whose path was a string, `MatchCondition("prefix", "bob")`,
was read letter by letter: user `"b"`'s namespaces were listed (another user's, had one been
called "b") and nothing was said. Now a namespace or path that is not a sequence of strings
is refused with `ValidationError` before anything is read or written, and a list is taken as
the tuple it spells, by every operation alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EpisodexStore]:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        yield EpisodexStore(memory, agent_id="assistant")
    finally:
        memory.close()


def _state(store: EpisodexStore) -> dict[str, Any]:
    return {
        user: [(i.namespace, i.key, i.value) for i in store.search((user,), limit=50)]
        for user in ("alice", "b")
    }


BAD_NAMESPACES: list[object] = [None, {"alice": "x"}, "alice", 7, ("alice", 7)]


@pytest.mark.parametrize("namespace", BAD_NAMESPACES, ids=repr)
async def test_a_bad_namespace_is_refused_in_every_op_and_nothing_is_written(
    store: EpisodexStore, namespace: object
) -> None:
    store.put(("alice", "food"), "diet", {"text": "vegetarian"})
    store.put(("b", "food"), "diet", {"text": "vegan"})
    before = _state(store)
    bad_ops: list[Op] = [
        PutOp(namespace, "k", {"text": "x"}),  # pyright: ignore[reportArgumentType]
        GetOp(namespace, "k"),  # pyright: ignore[reportArgumentType]
        SearchOp(namespace),  # pyright: ignore[reportArgumentType]
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", namespace),)),  # pyright: ignore[reportArgumentType]
    ]
    for bad in bad_ops:
        good = PutOp(("alice", "food"), "diet", {"text": "changed"})
        with pytest.raises(ValidationError, match=r"namespace|path"):
            store.batch([good, bad])
        with pytest.raises(ValidationError, match=r"namespace|path"):
            await store.abatch([good, bad])
    assert _state(store) == before


def test_a_list_namespace_works_for_a_put_as_for_a_get(store: EpisodexStore) -> None:
    store.batch([PutOp(["alice", "food"], "diet", {"text": "vegetarian"})])  # pyright: ignore[reportArgumentType]
    (item,) = store.batch([GetOp(["alice", "food"], "diet")])  # pyright: ignore[reportArgumentType]
    assert isinstance(item, Item) and item.value == {"text": "vegetarian"}
    assert item.namespace == ("alice", "food")
    (listed,) = store.batch(
        [ListNamespacesOp(match_conditions=(MatchCondition("prefix", ["alice"]),))]  # pyright: ignore[reportArgumentType]
    )
    assert listed == [("alice", "food")]


def test_a_string_prefix_never_lists_the_user_its_first_letter_names(
    store: EpisodexStore,
) -> None:
    store.put(("b", "secrets"), "pin", {"text": "1234"})
    with pytest.raises(ValidationError):
        store.batch([ListNamespacesOp(match_conditions=(MatchCondition("prefix", "bob"),))])  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError):
        store.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", "bob"),))])  # pyright: ignore[reportArgumentType]
