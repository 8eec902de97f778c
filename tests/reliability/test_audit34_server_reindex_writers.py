"""A re-index on a Qdrant server while another process writes to the same collection.

Writers of other processes hold no lock of the re-indexing one. A write made between the
re-index's last catch-up and its switch landed in the old collection, deleted at the switch:
lost, while the call returned its ids. A write that checked the collection before the switch
and arrived after it went through the collection's name into the new collection, with vectors
of the old models among the new ones (silently mis-ranked where the dimensions match). Now the
re-index marks the collection before its last catch-up, and a writer on a server reads the
mark (one request per call) after its write: a write that found none was made before the mark
and is copied; one that found it, or the collection switched, is taken back and raises
`EmbedderMismatchError`, nothing of it stored.

Two "processes" are two wrappers over one qdrant-client `:memory:` engine, each reporting the
kind `server` and being its own storage scope, so they hold separate write locks. The
re-indexing process's engine runs the other's write at each phase of the re-index.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import pytest
from episodex import EmbedderMismatchError, Engine, EpisodicMemory, open_engine
from episodex._engines.qdrant import QdrantClientEngine
from episodex.plan import Point
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"
OLD = HashEmbedder(model_id="test/old")


class Shifted(HashEmbedder):
    """Another model of the same dimension: its vectors differ from the old one's."""

    def embed_documents(self, texts: Sequence[str]) -> Any:
        return np.roll(super().embed_documents(texts), 1, axis=-1)

    def embed_query(self, text: str) -> Any:
        return np.roll(super().embed_query(text), 1)


NEW = Shifted(model_id="test/new")


class Process:
    """One process's view of a shared server: `:memory:` as a server of its own scope."""

    kind = "server"

    def __init__(self, inner: QdrantClientEngine) -> None:
        self.inner = inner
        #: Method name -> what runs once before (`before:<name>`) or after (`after:<name>`) it.
        self.hooks: dict[str, Callable[[], object]] = {}

    @property
    def storage_scope(self) -> object:
        return self

    def _hooked(self, name: str, *args: Any) -> Any:
        before = self.hooks.pop(f"before:{name}", None)
        if before is not None:
            before()
        result = getattr(self.inner, name)(*args)
        after = self.hooks.pop(f"after:{name}", None)
        if after is not None:
            after()
        return result

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self._hooked("upsert", collection, points)

    def mark_reindexing(self, collection: str, staging: str | None) -> None:
        self._hooked("mark_reindexing", collection, staging)

    def switch_collection(self, collection: str, staging: str) -> None:
        self._hooked("switch_collection", collection, staging)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _episode(tag: str, point_id: str | None = None) -> dict[str, Any]:
    ep: dict[str, Any] = {
        "short_summary": f"{tag} short",
        "long_summary": f"{tag} long",
        "user_id": USER,
        "agent_id": AGENT,
        "conversation_id": "c",
    }
    if point_id is not None:
        ep["point_id"] = point_id
    return ep


class Race:
    """A re-indexing process `a` and a writing process `b` on one store."""

    def __init__(self) -> None:
        self.inner = cast(QdrantClientEngine, open_engine(location=":memory:"))
        self.a, self.b = Process(self.inner), Process(self.inner)
        self.mem_a = EpisodicMemory(engine=cast(Engine, self.a), embedder=OLD, splade=False)
        self.mem_b = EpisodicMemory(engine=cast(Engine, self.b), embedder=OLD, splade=False)
        self.kept = self.mem_a.store.memorize_many([_episode("kept")])
        self.written: list[str] = []
        self.error: BaseException | None = None

    def write(self, tag: str) -> None:
        """`b` writes one new episode; its ids or its error are kept."""
        try:
            self.written = self.mem_b.store.memorize_many([_episode(tag)])
        except BaseException as exc:
            self.error = exc

    def reindex(self) -> None:
        asyncio.run(self.mem_a.reindex(NEW))

    def stored(self) -> dict[str, tuple[str, list[float]]]:
        """Every stored episode: short summary and `short` vector, read as a new process."""
        name = f"episodex_{self.mem_a.store.collection}"
        records, _ = self.inner.client.scroll(name, limit=100, with_vectors=True)
        out: dict[str, tuple[str, list[float]]] = {}
        for r in records:
            vectors = cast(dict[str, list[float]], r.vector)
            out[str(r.id)] = (str((r.payload or {})["short_summary_text"]), vectors["short"])
        return out

    def close(self) -> None:
        self.mem_a.close()
        self.mem_b.close()
        self.inner.close()


@pytest.fixture
def race() -> Iterator[Race]:
    r = Race()
    yield r
    r.close()


def _new_vector(text: str) -> list[float]:
    return NEW.embed_documents([text])[0].tolist()


def _assert_new_vectors(stored: dict[str, tuple[str, list[float]]]) -> None:
    for text, vector in stored.values():
        assert np.allclose(vector, _new_vector(text), atol=1e-6), text


def test_a_write_before_the_mark_is_carried_over_with_new_vectors(race: Race) -> None:
    race.a.hooks["before:mark_reindexing"] = lambda: race.write("early")
    race.reindex()
    assert race.error is None and len(race.written) == 1
    stored = race.stored()
    assert {t for t, _ in stored.values()} == {"kept short", "early short"}
    _assert_new_vectors(stored)


@pytest.mark.parametrize(
    "phase",
    [
        "after:mark_reindexing",  # before the last catch-up reads the collection
        "before:switch_collection",  # after the last catch-up, before the switch
    ],
)
def test_a_write_during_the_last_catch_up_is_refused_and_nothing_stored(
    race: Race, phase: str
) -> None:
    race.a.hooks[phase] = lambda: race.write("racing")
    race.reindex()
    assert isinstance(race.error, EmbedderMismatchError)
    assert "nothing of this call is stored" in str(race.error)
    stored = race.stored()
    assert {t for t, _ in stored.values()} == {"kept short"}
    _assert_new_vectors(stored)


@pytest.mark.parametrize("again", [False, True], ids=["first-reindex", "second-reindex"])
def test_a_write_checked_before_the_switch_and_landing_after_it_is_taken_back(
    race: Race, again: bool
) -> None:
    if again:  # the collection's name is an alias already: the switch moves it
        race.reindex()
        race.mem_b.close()
        race.mem_b = EpisodicMemory(engine=cast(Engine, race.b), embedder=NEW, splade=False)
        asyncio.run(race.mem_a.reindex(OLD))
        race.mem_a.close()
        race.mem_a = EpisodicMemory(engine=cast(Engine, race.a), embedder=OLD, splade=False)
        race.mem_b.close()
        race.mem_b = EpisodicMemory(engine=cast(Engine, race.b), embedder=OLD, splade=False)
    collection = race.mem_a.store.collection
    switch = race.a.switch_collection

    def racing_switch(collection_: str, staging: str) -> None:
        # `b` checks the collection, then the switch happens before its write arrives.
        race.b.hooks["before:upsert"] = lambda: race.inner.switch_collection(collection, staging)
        race.write("late")
        switch(collection_, staging)  # done already: changes nothing

    race.a.switch_collection = racing_switch  # type: ignore[method-assign]
    race.reindex()
    assert isinstance(race.error, EmbedderMismatchError)
    assert "nothing of this call is stored" in str(race.error)
    stored = race.stored()
    assert {t for t, _ in stored.values()} == {"kept short"}
    _assert_new_vectors(stored)


def test_a_write_after_the_switch_is_refused_before_it_is_made(race: Race) -> None:
    race.a.hooks["after:switch_collection"] = lambda: race.write("after")
    race.reindex()
    assert isinstance(race.error, EmbedderMismatchError)
    stored = race.stored()
    assert {t for t, _ in stored.values()} == {"kept short"}
    _assert_new_vectors(stored)
