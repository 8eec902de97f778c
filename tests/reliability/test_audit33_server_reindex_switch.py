"""A re-index on a Qdrant server whose switch a server applied but failed to answer.

`switch_collection` makes a re-index's staging collection the store in a few requests: the
first time, mark the copy, delete the old collection, point an alias at the copy; later, move
the alias, delete the old copy. A server can apply a request and still fail the call (a proxy's
500 after the write, an answer that never came): the switch raised, so the re-index took itself
for not done and the memory went on with the old embedder, while the alias already served the
new collection (its writes embedded with the old model among the new vectors), or the old
collection was gone with no alias yet (every read and a resumed re-index failed until the
store was opened again). Now the engine looks at what the server holds after a failed switch:
switched, the re-index ends as done (what is left over is logged and dropped by the next one);
half switched, it finishes the switch; not switched, the error says that the old collection
still serves every episode and that running the re-index again finishes it.

The engine is qdrant-client's `:memory:`, whose client is wrapped to apply chosen requests and
then raise the server's 500, as a server behind a proxy that timed out does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import pytest
from episodex import EngineError, EpisodicMemory, open_engine
from episodex.testing import HashEmbedder
from qdrant_client.http.exceptions import UnexpectedResponse

USER, AGENT = "u", "a"
OLD = HashEmbedder(model_id="test/old")
NEW = HashEmbedder(model_id="test/new")
NEWER = HashEmbedder(model_id="test/newer")


def _failing(real: Callable[..., Any], *, applied: bool) -> Callable[..., Any]:
    calls = {"n": 0}

    def call(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            if applied:
                real(*args, **kwargs)
            raise UnexpectedResponse(500, "Internal Server Error", b'{"status":"boom"}', None)  # pyright: ignore[reportArgumentType]
        return real(*args, **kwargs)

    return call


@contextmanager
def _memory() -> Generator[EpisodicMemory]:
    engine = open_engine(location=":memory:")
    mem = EpisodicMemory(engine=engine, embedder=OLD, splade=False)
    try:
        yield mem
    finally:
        mem.close()
        engine.close()


def _texts(mem: EpisodicMemory) -> set[str]:
    items = mem.store.read_recent(1000, user_id=USER, agent_id=AGENT)
    return {item["short_summary_text"] for item in items}


def _add(mem: EpisodicMemory, tag: str, n: int) -> None:
    mem.store.memorize_many(
        [
            {
                "short_summary": f"{tag} {i}",
                "long_summary": f"{tag} long {i}",
                "user_id": USER,
                "agent_id": AGENT,
                "conversation_id": "c",
            }
            for i in range(n)
        ]
    )


def _reindex(mem: EpisodicMemory, embedder: HashEmbedder) -> None:
    asyncio.run(mem.reindex(embedder))


def _served_embedder(mem: EpisodicMemory) -> str:
    other = EpisodicMemory(
        engine=mem.store.engine, embedder=HashEmbedder(model_id="x"), splade=False, for_reindex=True
    )
    try:
        return other.store.stored_embedder
    finally:
        other.close()


# The first switch marks the copy, deletes the old collection, then makes the alias; a later
# one moves the alias, then deletes the old copy.
@pytest.mark.parametrize("applied", [True, False])
@pytest.mark.parametrize(
    ("request_name", "first"),
    [
        ("update_collection", True),
        ("delete_collection", True),
        ("update_collection_aliases", True),
        ("delete_collection", False),
        ("update_collection_aliases", False),
    ],
)
def test_a_failed_switch_ends_switched_or_not_never_in_between(
    request_name: str, first: bool, applied: bool
) -> None:
    with _memory() as mem:
        _add(mem, "kept", 5)
        if not first:
            _reindex(mem, NEWER)
        client: Any = mem.store.engine.client  # pyright: ignore[reportAttributeAccessIssue]
        real = getattr(client, request_name)
        setattr(client, request_name, _failing(real, applied=applied))
        want = {f"kept {i}" for i in range(5)}
        try:
            _reindex(mem, NEW)
        except EngineError as exc:
            # Not switched: the old collection serves everything, and the error says so.
            assert "still serves" in str(exc) and "again" in str(exc)
            assert _texts(mem) == want
            assert _served_embedder(mem) == mem.store.stored_embedder != NEW.model_id
            _add(mem, "during", 1)
            _reindex(mem, NEW)
            want.add("during 0")
        # Switched: this memory, and every other opened now, use the new collection.
        assert mem.store.stored_embedder == NEW.model_id == _served_embedder(mem)
        assert _texts(mem) == want
        _add(mem, "after", 1)
        assert _texts(mem) == {*want, "after 0"}
        _reindex(mem, NEWER)
        assert _texts(mem) == {*want, "after 0"}
        names = {c.name for c in client.get_collections().collections}
        aliases = {a.collection_name for a in client.get_aliases().aliases}
        # Only the served collections are left (episodes, and the other kinds of this store).
        assert not [n for n in names if "_reindex_" in n and n not in aliases]


def test_a_switch_cut_in_half_is_finished_by_the_next_reindex() -> None:
    with _memory() as mem:
        _add(mem, "kept", 5)
        client: Any = mem.store.engine.client  # pyright: ignore[reportAttributeAccessIssue]
        # The old collection is deleted (the call fails), then finishing the switch fails.
        client.delete_collection = _failing(client.delete_collection, applied=True)
        aliases = client.update_collection_aliases
        client.update_collection_aliases = _failing(aliases, applied=False)
        with pytest.raises(EngineError, match=r"none is lost.*run the re-index again"):
            _reindex(mem, NEW)
        _reindex(mem, NEW)
        assert mem.store.stored_embedder == NEW.model_id == _served_embedder(mem)
        assert _texts(mem) == {f"kept {i}" for i in range(5)}
