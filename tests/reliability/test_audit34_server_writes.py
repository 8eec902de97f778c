"""Writes on a Qdrant server that fail after the server applied them.

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
