"""A forget by another process while a re-index on a Qdrant server catches up and switches.

A forget deletes in the collection being re-indexed. One landing after the re-index's last
catch-up read the collection is not carried to the copy: at the switch the forgotten episodes
came back, while the forget returned how many it deleted. A forget on a server now reads the
re-index mark after deleting (as writers do): when the collection is marked or switched it
raises `EmbedderMismatchError`, saying to forget again once the re-index has finished.

Two "processes" are two wrappers over one qdrant-client `:memory:` engine, each reporting the
kind `server` and being its own storage scope, so they hold separate write locks.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import pytest
from episodex import EmbedderMismatchError, Engine, EpisodicMemory, open_engine
from episodex._engines.qdrant import QdrantClientEngine
from episodex.plan import Point
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"
OLD, NEW = HashEmbedder(model_id="test/old"), HashEmbedder(model_id="test/new")


class Process:
    """One process's view of a shared server: `:memory:` as a server of its own scope."""

    kind = "server"

    def __init__(self, inner: QdrantClientEngine) -> None:
        self.inner = inner
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

    def delete_staged(self, collection: str, flt: Any) -> None:
        self._hooked("delete_staged", collection, flt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Race:
    """A re-indexing process `a` and a forgetting process `b` on one store."""

    def __init__(self) -> None:
        self.inner = cast(QdrantClientEngine, open_engine(location=":memory:"))
        self.a, self.b = Process(self.inner), Process(self.inner)
        self.mem_a = EpisodicMemory(engine=cast(Engine, self.a), embedder=OLD, splade=False)
        self.mem_b = EpisodicMemory(engine=cast(Engine, self.b), embedder=OLD, splade=False)
        self.mem_a.store.memorize_many(
            [
                {
                    "short_summary": f"{c} short",
                    "long_summary": f"{c} long",
                    "user_id": USER,
                    "agent_id": AGENT,
                    "conversation_id": c,
                }
                for c in ("kept", "secret")
            ]
        )
        self.forgotten: int | None = None
        self.error: BaseException | None = None

    def forget(self) -> None:
        try:
            self.forgotten = self.mem_b.store.forget(
                user_id=USER, agent_id=AGENT, conversation_id="secret"
            )
        except BaseException as exc:
            self.error = exc

    def stored(self) -> set[str]:
        name = f"episodex_{self.mem_a.store.collection}"
        records, _ = self.inner.client.scroll(name, limit=100)
        return {str((r.payload or {})["short_summary_text"]) for r in records}

    def close(self) -> None:
        self.mem_a.close()
        self.mem_b.close()
        self.inner.close()


@pytest.fixture
def race() -> Iterator[Race]:
    r = Race()
    yield r
    r.close()


def test_a_forget_before_the_mark_is_carried_over(race: Race) -> None:
    race.a.hooks["before:mark_reindexing"] = race.forget
    asyncio.run(race.mem_a.reindex(NEW))
    assert race.error is None and race.forgotten == 1
    assert race.stored() == {"kept short"}


def test_a_forget_after_the_last_catch_up_is_not_reported_as_done(race: Race) -> None:
    # `b` deletes the staged copies (none yet), then `a` re-indexes up to its switch (copying
    # the conversation `b` is forgetting), then `b` deletes in the collection, then `a` switches.
    caught_up, forgot = threading.Event(), threading.Event()

    def reindex() -> None:
        def hold_switch() -> None:
            caught_up.set()
            assert forgot.wait(60)

        race.a.hooks["before:switch_collection"] = hold_switch
        asyncio.run(race.mem_a.reindex(NEW))

    thread = threading.Thread(target=reindex)

    def start_reindex() -> None:
        thread.start()
        assert caught_up.wait(60)

    race.b.hooks["after:delete_staged"] = start_reindex
    race.forget()
    forgot.set()
    thread.join()
    # The forgotten conversation is back in the switched collection: the forget must say so.
    assert race.stored() == {"kept short", "secret short"}
    assert isinstance(race.error, EmbedderMismatchError), race.forgotten
    assert "forget again" in str(race.error)
    # Forgetting again once the re-index has finished deletes it for good.
    race.mem_b.close()
    race.mem_b = EpisodicMemory(engine=cast(Engine, race.b), embedder=NEW, splade=False)
    race.error = None
    race.forget()
    assert race.error is None and race.forgotten == 1
    assert race.stored() == {"kept short"}
