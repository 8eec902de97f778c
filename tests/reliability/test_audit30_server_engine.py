"""The qdrant-client engine (a Qdrant server, or `:memory:`) where several memories share a store.

A memory that another memory on the same store re-indexed refused to write, on every backend,
but it refused to recall only on the embedded store: on qdrant-client (`:memory:` with a shared
engine, or a server, from this process or another) its recall embedded the query with its own,
older model and searched the collection that now held the new model's vectors. With models of
the same dimension it answered with a ranking that compared two models' vectors, silently. A
recall now checks which collection serves the name on every backend, and refuses.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from conformance.backends import engine_options
from episodex import Embedder, EmbedderMismatchError, Engine, SyncEpisodicMemory, open_engine
from episodex.testing import HashEmbedder

from ._support import BACKENDS, drop_server_collections

U, A = "u", "a"


def episode(text: str, conversation: str = "c") -> dict[str, Any]:
    return {
        "user_id": U,
        "agent_id": A,
        "conversation_id": conversation,
        "short_summary": text,
        "long_summary": text,
    }


@contextmanager
def two_memories(
    backend: str, tmp_path: Path, embedder: Embedder
) -> Generator[tuple[SyncEpisodicMemory, SyncEpisodicMemory]]:
    """Two memories on one store of `backend` (`:memory:`: one engine, each memory its own)."""
    path, options = engine_options(backend, tmp_path)
    if backend == "memory":
        engine = open_engine(**options)
        first = SyncEpisodicMemory(engine=engine, embedder=embedder, splade=False)
        second = SyncEpisodicMemory(engine=engine, embedder=embedder, splade=False)
    else:
        first = SyncEpisodicMemory(path, embedder=embedder, splade=False, **options)
        second = SyncEpisodicMemory(path, embedder=embedder, splade=False, **options)
        engine = None
    try:
        yield first, second
    finally:
        if backend == "server":
            drop_server_collections(first.memory)
        first.close()
        second.close()
        if engine is not None:
            engine.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_memory_another_memory_reindexed_refuses_to_recall(backend: str, tmp_path: Path) -> None:
    # Both 384 dimensions: the engine cannot tell the two models' vectors apart.
    old, new = HashEmbedder(model_id="test/old"), HashEmbedder(model_id="test/new")
    with two_memories(backend, tmp_path, old) as (first, second):
        first.memorize(**episode("kettle refund"))
        first.memorize(**episode("train tickets", "c2"))
        assert second.recall(user_id=U, agent_id=A, query="kettle")["previous_conversations"]
        first.reindex(new)
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            second.recall(user_id=U, agent_id=A, query="kettle")
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            second.recall_block(user_id=U, agent_id=A, query="kettle")
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            second.memorize(**episode("written with the old model"))
        # Reading needs no model: it works; the memory that re-indexed recalls as before.
        assert second.count(user_id=U, agent_id=A) == 2
        found = first.recall(user_id=U, agent_id=A, query="kettle")
        assert found["previous_conversations"][0]["short_summary_text"] == "kettle refund"


class _ServerLike:
    """A real `:memory:` engine that says it is a server, and counts the generation requests.

    Two memories given the same one stand for two memories of one process on one server.
    """

    def __init__(self) -> None:
        self.inner = open_engine(location=":memory:")
        self.asked = 0

    @property
    def kind(self) -> str:
        return "server"

    def generation(self, collection: str) -> str:
        self.asked += 1
        return self.inner.generation(collection)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_server_memory_this_process_reindexed_refuses_to_recall_without_a_request() -> None:
    old, new = HashEmbedder(model_id="test/old"), HashEmbedder(model_id="test/new")
    server = _ServerLike()
    engine = cast(Engine, server)
    first = SyncEpisodicMemory(engine=engine, embedder=old, splade=False)
    second = SyncEpisodicMemory(engine=engine, embedder=old, splade=False)
    try:
        first.memorize(**episode("kettle refund"))
        asked = server.asked
        assert second.recall(user_id=U, agent_id=A, query="kettle")["previous_conversations"]
        assert server.asked == asked  # a recall on a server asks nothing more of it
        first.reindex(new)
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            second.recall(user_id=U, agent_id=A, query="kettle")
        # The memory that re-indexed, and one opened after, recall without asking either.
        third = SyncEpisodicMemory(engine=engine, embedder=new, splade=False)
        try:
            asked = server.asked
            for mem in (first, third):
                found = mem.recall(user_id=U, agent_id=A, query="kettle")
                assert found["previous_conversations"][0]["short_summary_text"] == "kettle refund"
            assert server.asked == asked
        finally:
            third.close()
    finally:
        first.close()
        second.close()
        server.inner.close()
