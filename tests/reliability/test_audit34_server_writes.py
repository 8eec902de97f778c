"""Writes on a Qdrant server that fail after the server applied them, or get an answer not read.

A call of one write with explicit point ids (`memorize(point_id=...)`, the recorder's turns, an
import of records that carry their ids) that the server applied and then failed to answer for
stayed stored, new or replacing what was there, while the call raised: a caller told "failed"
that sees the episode next recall. Such a call is taken back now too: the episodes it would
replace are read first (in the read that checks their owners), and restored.

When taking a failed write back failed too, the error told the caller to call `memorize_many`
again, also when the call was `import_`: it names the call made now.

The failing engine is qdrant-client's `:memory:`, wrapped to apply chosen upserts and then raise,
reporting the kind `server` (whose writes are not recorded for the next open to take back).
"""

from __future__ import annotations

import io
import json
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import pytest
from episodex import Engine, EngineError, EngineUnavailableError, EpisodicMemory, open_engine
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"
IDS = [f"00000000-0000-4000-8000-{i:012d}" for i in range(4)]


class AppliedThenFailed:
    """`:memory:` whose chosen upserts (counted from 1) are applied and then raise."""

    def __init__(self, inner: Engine, *, fail_deletes: bool = False) -> None:
        self.inner = inner
        self.fail_upserts: set[int] = set()
        self.fail_deletes = fail_deletes
        self.kind = "server"
        self.upserts = 0

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.upserts += 1
        self.inner.upsert(collection, points)
        if self.upserts in self.fail_upserts:
            raise EngineUnavailableError(
                "upsert failed: the Qdrant server is unreachable after 3 attempts (timed out)"
            )

    def delete(self, collection: str, flt: Filter) -> None:
        if self.fail_deletes:
            raise EngineUnavailableError("delete failed: the Qdrant server is unreachable")
        self.inner.delete(collection, flt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def _memory(*, fail_deletes: bool = False) -> Generator[tuple[AppliedThenFailed, EpisodicMemory]]:
    engine = AppliedThenFailed(open_engine(location=":memory:"), fail_deletes=fail_deletes)
    mem = EpisodicMemory(engine=cast(Engine, engine), embedder=HashEmbedder(), splade=False)
    try:
        yield engine, mem
    finally:
        mem.close()
        engine.inner.close()


def _episode(tag: str, i: int, point_id: str | None = None) -> dict[str, Any]:
    ep: dict[str, Any] = {
        "short_summary": f"{tag} short {i}",
        "long_summary": f"{tag} long {i}",
        "user_id": USER,
        "agent_id": AGENT,
        "conversation_id": f"conv-{tag}",
    }
    if point_id is not None:
        ep["point_id"] = point_id
    return ep


def _texts(mem: EpisodicMemory) -> dict[str, str]:
    items = mem.store.read_recent(1000, user_id=USER, agent_id=AGENT)
    return {item["point_id"]: item["short_summary_text"] for item in items}


async def test_a_single_write_with_new_point_ids_applied_then_failed_is_taken_back() -> None:
    with _memory() as (engine, mem):
        engine.fail_upserts = {1, 2}
        with pytest.raises(EngineUnavailableError):
            mem.store.memorize_many([_episode("new", i, IDS[i]) for i in range(3)])
        with pytest.raises(EngineUnavailableError):
            await mem.memorize(**_episode("one", 0, IDS[3]))
        assert _texts(mem) == {}


async def test_a_single_write_replacing_episodes_applied_then_failed_restores_them() -> None:
    with _memory() as (engine, mem):
        mem.store.memorize_many([_episode("old", i, IDS[i]) for i in range(2)])
        before = _texts(mem)
        # One replaced, one new, in one write. (Restoring is an upsert too: only the call's
        # own upsert fails.)
        engine.fail_upserts = {engine.upserts + 1}
        with pytest.raises(EngineUnavailableError):
            mem.store.memorize_many([_episode("new", 0, IDS[0]), _episode("new", 2, IDS[2])])
        engine.fail_upserts = {engine.upserts + 1}
        with pytest.raises(EngineUnavailableError):
            await mem.memorize(**_episode("replacing", 1, IDS[1]))
        assert _texts(mem) == before
        # The restored episodes are found by their own words again.
        found = await mem.recall(user_id=USER, agent_id=AGENT, query="old short 1")
        assert found["previous_conversations"][0]["point_id"] == IDS[1]


def test_an_import_whose_take_back_failed_names_import_not_memorize_many() -> None:
    lines = [
        json.dumps(
            {
                "user_id": USER,
                "agent_id": AGENT,
                "conversation_id": "c",
                "short_summary": f"imported {i}",
                "long_summary": f"imported long {i}",
            }
        )
        for i in range(300)
    ]
    with _memory(fail_deletes=True) as (engine, mem):
        engine.fail_upserts = {2}
        with pytest.raises(EngineError) as caught:
            mem.store.import_(io.StringIO("\n".join(lines) + "\n"))
    message = str(caught.value)
    assert "memorize_many" not in message, message
    assert message.startswith("import_ failed"), message


def test_a_memorize_many_whose_take_back_failed_still_names_memorize_many() -> None:
    with _memory(fail_deletes=True) as (engine, mem):
        engine.fail_upserts = {2}
        with pytest.raises(EngineError) as caught:
            mem.store.memorize_many([_episode("n", i) for i in range(4)], batch_size=2)
    assert str(caught.value).startswith("memorize_many failed"), caught.value
