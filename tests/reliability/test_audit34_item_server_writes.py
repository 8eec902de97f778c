"""Item writes a Qdrant server applied and then failed to answer for.

`ItemStore.write` puts and deletes items in one upsert. A server can apply it and then fail the
call (a timed-out answer, a dropped connection): the items were stored, new or replacing, and
deleted items gone, while the call raised. Replaced items cannot be restored (their vectors
cannot be read back, and their text is not stored), so the write is not taken back: it is read
back instead. Applied whole, it is stored and the call returns; not applied at all, the call
raises with nothing changed; applied in part, or not readable, the error names the items that
may hold the write and says to write the batch again.

The failing engine is qdrant-client's `:memory:`, wrapped to fail chosen upserts before or
after applying them and reporting the kind `server`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest
from episodex import (
    Engine,
    EngineError,
    EngineUnavailableError,
    ItemPut,
    ItemRef,
    ItemStore,
    open_engine,
)
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder


class FailingServer:
    """`:memory:` whose next upsert, once `fail` is set, raises before or after it is applied."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.kind = "server"
        self.fail: str | None = None  # "applied", "not-applied"
        self.fail_reads = False

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        fail, self.fail = self.fail, None
        if fail != "not-applied":
            self.inner.upsert(collection, points)
        if fail is not None:
            self.fail_reads = self.fail_reads_after
            raise EngineUnavailableError(
                "upsert failed: the Qdrant server is unreachable after 3 attempts (timed out)"
            )

    fail_reads_after = False

    def scroll(self, collection: str, flt: Filter, **kwargs: Any) -> Any:
        if self.fail_reads:
            raise EngineUnavailableError("scroll failed: the Qdrant server is unreachable")
        return self.inner.scroll(collection, flt, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _ref(key: str) -> ItemRef:
    return ItemRef("u", "a", ("u", "notes"), key)


def _values(items: ItemStore) -> dict[str, object]:
    found = items.search(user_id="u", agent_id="a", limit=100)
    return {item.key: item.value["v"] for item in found}


def _store() -> tuple[FailingServer, ItemStore]:
    engine = FailingServer(open_engine(location=":memory:"))
    items = ItemStore(cast(Engine, engine), HashEmbedder())
    items.write(
        [
            ItemPut(_ref("diet"), {"v": "vegetarian"}, text="vegetarian diet"),
            ItemPut(_ref("city"), {"v": "Lyon"}),
            ItemPut(_ref("pet"), {"v": "cat"}, text="has a cat"),
        ]
    )
    return engine, items


def _batch(items: ItemStore) -> None:
    items.write(
        [
            ItemPut(_ref("diet"), {"v": "vegan"}, text="vegan diet"),
            ItemPut(_ref("city"), {"v": "Oslo"}),
            ItemPut(_ref("sport"), {"v": "chess"}, text="plays chess"),
        ],
        deletes=[_ref("pet")],
    )


def test_an_item_write_applied_then_failed_is_stored_and_the_call_returns() -> None:
    engine, items = _store()
    try:
        engine.fail = "applied"
        _batch(items)  # applied whole: stored, so the call does not say it failed
        assert _values(items) == {"diet": "vegan", "city": "Oslo", "sport": "chess"}
        # Indexed with the write's own vectors, and the delete's tombstone removed.
        found = items.search(user_id="u", agent_id="a", query="vegan diet", limit=1)
        assert [i.key for i in found] == ["diet"]
        assert engine.inner.count(items.collection, Filter()) == 3
    finally:
        engine.inner.close()


def test_an_item_write_failed_before_it_was_applied_raises_with_nothing_changed() -> None:
    engine, items = _store()
    try:
        before = _values(items)
        engine.fail = "not-applied"
        with pytest.raises(EngineUnavailableError):
            _batch(items)
        assert _values(items) == before
    finally:
        engine.inner.close()


def test_an_item_write_failed_and_not_readable_names_the_items_it_may_have_changed() -> None:
    engine, items = _store()
    try:
        engine.fail, engine.fail_reads_after = "applied", True
        with pytest.raises(EngineError) as raised:
            _batch(items)
        message = str(raised.value)
        for key in ("diet", "city", "sport", "pet"):
            assert repr(key) in message
        assert "write the batch again" in message
        assert isinstance(raised.value.__cause__, EngineUnavailableError)
    finally:
        engine.fail_reads = False
        engine.inner.close()
