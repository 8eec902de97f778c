"""A TTL given to `EpisodexStore` is refused with a typed episodex error, nothing written.

The store has no TTLs (`supports_ttl = False`). LangGraph's own `put` refuses a `ttl` with a
`NotImplementedError`, but a `PutOp` with one given to `batch`/`abatch` directly (or made by
`put` from a `ttl_config` default) met the store's refusal: a builtin `NotImplementedError`, no
episodex error class. It is now `NotSupportedError`, which is both (a LangGraph caller catching
`NotImplementedError` still does), raised before anything of the batch is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory, NotSupportedError
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodexStore
from langgraph.store.base import PutOp


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EpisodexStore]:
    memory = EpisodicMemory(path=tmp_path / "s", embedder=HashEmbedder())
    try:
        yield EpisodexStore(memory, agent_id="assistant")
    finally:
        memory.close()


def _ops() -> list[PutOp]:
    return [
        PutOp(("alice", "notes"), "first", {"text": "no ttl"}),
        PutOp(("alice", "notes"), "second", {"text": "a ttl"}, ttl=5.0),
    ]


def test_a_batch_with_a_ttl_is_refused_typed_and_writes_nothing(store: EpisodexStore) -> None:
    with pytest.raises(NotSupportedError, match="TTL"):
        store.batch(_ops())
    # What a LangGraph caller catches, as LangGraph's own refusal of a ttl in `put`.
    with pytest.raises(NotImplementedError):
        store.batch(_ops())
    assert store.get(("alice", "notes"), "first") is None


async def test_abatch_with_a_ttl_is_refused_typed_and_writes_nothing(
    store: EpisodexStore,
) -> None:
    with pytest.raises(NotSupportedError, match="TTL"):
        await store.abatch(_ops())
    assert await store.aget(("alice", "notes"), "first") is None


def test_a_default_ttl_of_ttl_config_is_refused_typed(store: EpisodexStore) -> None:
    store.ttl_config = {"default_ttl": 5.0}
    with pytest.raises(NotSupportedError, match="TTL"):
        store.put(("alice", "notes"), "k", {"text": "x"})
    store.ttl_config = None
    assert store.get(("alice", "notes"), "k") is None
