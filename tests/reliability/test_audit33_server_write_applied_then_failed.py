"""A write of several batches whose failing batch a Qdrant server applied anyway.

`memorize_many` (and `import_`, and every write through `EpisodeStore.write_all`) writes
`batch_size` episodes at a time and takes back the batches written before one that fails. It
counted a batch as written only once its upsert returned. A server can apply an upsert and
still fail the call (the answer timed out, the connection dropped after the request went out,
an error answered after the write): that batch stayed stored while the call raised, and when
it was the first batch nothing was taken back at all. A retry then stored those episodes twice.
The point ids are chosen before the upsert, so the failed batch is taken back with the others
now (deleting ids that were never written changes nothing); and when taking back fails too,
the error names the failed batch's episodes as ones that may be stored.

The engine is qdrant-client's `:memory:`, wrapped to apply chosen upserts and then raise, as a
server whose answer timed out does, and reporting the kind `server` (whose writes are not
recorded for the next open to take back).
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


class AppliedThenFailed:
    """`:memory:` whose chosen upserts (counted from 1) are applied and then raise.

    `fail_deletes` makes every delete fail, as a server gone away would.
    """

    def __init__(
        self,
        inner: Engine,
        *,
        fail_upserts: Sequence[int] = (),
        fail_deletes: bool = False,
        kind: str = "server",
    ) -> None:
        self.inner = inner
        self.fail_upserts = set(fail_upserts)
        self.fail_deletes = fail_deletes
        self.kind = kind
        self.upserts = 0

    def engine(self) -> Engine:
        return cast(Engine, self)

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
def _memory(**failing: Any) -> Generator[tuple[AppliedThenFailed, EpisodicMemory]]:
    engine = AppliedThenFailed(open_engine(location=":memory:"), **failing)
    mem = EpisodicMemory(engine=engine.engine(), embedder=HashEmbedder(), splade=False)
    try:
        yield engine, mem
    finally:
        mem.close()
        engine.inner.close()


def _episodes(tag: str, n: int, *, ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        ep: dict[str, Any] = {
            "short_summary": f"{tag} short {i}",
            "long_summary": f"{tag} long {i}",
            "user_id": USER,
            "agent_id": AGENT,
            "conversation_id": f"conv-{tag}",
        }
        if i < len(ids):
            ep["point_id"] = ids[i]
        out.append(ep)
    return out


def _texts(mem: EpisodicMemory) -> dict[str, str]:
    items = mem.store.read_recent(1000, user_id=USER, agent_id=AGENT)
    return {item["point_id"]: item["short_summary_text"] for item in items}


@pytest.mark.parametrize("kind", ["server", "memory"])
@pytest.mark.parametrize("failing", [1, 2, 3])
def test_a_batch_applied_before_its_write_failed_is_taken_back(kind: str, failing: int) -> None:
    with _memory(fail_upserts=[failing], kind=kind) as (_, mem):
        with pytest.raises(EngineUnavailableError, match="timed out"):
            mem.store.memorize_many(_episodes("n", 6), batch_size=2)
        assert _texts(mem) == {}


def test_replaced_episodes_of_the_applied_batch_are_restored() -> None:
    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(4)]
    with _memory() as (engine, mem):
        mem.store.memorize_many(_episodes("old", 4, ids=ids))
        before = _texts(mem)
        engine.fail_upserts = {engine.upserts + 2}
        with pytest.raises(EngineUnavailableError):
            mem.store.memorize_many(_episodes("new", 6, ids=ids), batch_size=2)
        assert _texts(mem) == before


def test_an_import_whose_last_batch_was_applied_imports_nothing() -> None:
    records = [
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
    with _memory(fail_upserts=[2]) as (_, mem):
        with pytest.raises(EngineUnavailableError):
            mem.store.import_(io.StringIO("\n".join(records) + "\n"))
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0


def test_when_taking_back_fails_the_error_names_the_failed_batch_as_maybe_stored() -> None:
    with _memory(fail_upserts=[2], fail_deletes=True) as (_, mem):
        with pytest.raises(EngineError) as caught:
            mem.store.memorize_many(_episodes("n", 4), batch_size=2)
        stored = set(_texts(mem))
        assert len(stored) == 4
        message = str(caught.value)
        assert "may be stored" in message
        for point_id in stored:
            assert point_id in message


def test_when_taking_back_the_first_batch_fails_the_error_does_not_say_nothing_was_stored() -> None:
    with _memory(fail_upserts=[1], fail_deletes=True) as (_, mem):
        with pytest.raises(EngineError) as caught:
            mem.store.memorize_many(_episodes("n", 4), batch_size=2)
        stored = set(_texts(mem))
        assert len(stored) == 2
        message = str(caught.value)
        assert "may be stored" in message
        for point_id in stored:
            assert point_id in message


async def test_a_single_write_applied_on_a_server_before_failing_is_taken_back() -> None:
    with _memory(fail_upserts=[1, 2]) as (_, mem):
        with pytest.raises(EngineUnavailableError):
            mem.store.memorize_many(_episodes("one", 3))
        with pytest.raises(EngineUnavailableError):
            await mem.memorize(**_episodes("single", 1)[0])
        assert _texts(mem) == {}
