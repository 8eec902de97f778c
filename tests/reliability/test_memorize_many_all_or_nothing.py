"""`memorize_many` over several engine writes is all or nothing.

One engine write is atomic (the write-ahead log), but `memorize_many` writes `batch_size`
episodes at a time. It used to embed and write batch by batch, so a failure in a later batch
(an embedder error, a full disk, an engine error) left the earlier batches stored while the call
raised: a retry then stored them twice. Now every episode is embedded before the first write,
and a write that fails after others takes them back: new episodes are deleted, replaced ones get
their stored payload and vectors back.

The failing engine is the real embedded engine with one write made to fail, the failure a full
disk or a dead server would give at that point.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pytest
from episodex import Engine, EngineError, EpisodicMemory, StorageFullError, open_engine
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"


class FailingEmbedder(HashEmbedder):
    """Embeds `ok_calls` batches of documents, then raises."""

    def __init__(self, ok_calls: int) -> None:
        super().__init__()
        self.ok_calls = ok_calls

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.ok_calls <= 0:
            raise RuntimeError("embedding service unavailable")
        self.ok_calls -= 1
        return super().embed_documents(texts)


class FailingWrites:
    """The real embedded engine, with chosen upserts (counted from 1) and deletes failing.

    Everything else goes to the engine itself; `engine()` is this wrapper as the `Engine` the
    memory takes.
    """

    def __init__(
        self, inner: Engine, *, fail_upserts: Sequence[int] = (), fail_deletes: bool = False
    ) -> None:
        self.inner = inner
        self.fail_upserts = set(fail_upserts)
        self.fail_deletes = fail_deletes
        self.upserts = 0

    def engine(self) -> Engine:
        return cast(Engine, self)

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.upserts += 1
        if self.upserts in self.fail_upserts:
            raise StorageFullError("writing refused: the disk is full (injected)")
        self.inner.upsert(collection, points)

    def delete(self, collection: str, flt: Filter) -> None:
        if self.fail_deletes:
            raise EngineError("delete failed (injected)")
        self.inner.delete(collection, flt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


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


@contextmanager
def _memory(tmp_path: Path, **failing: Any) -> Generator[tuple[FailingWrites, EpisodicMemory]]:
    """A memory on the real engine with `failing` writes (see `FailingWrites`), then closed."""
    engine = FailingWrites(open_engine(path=str(tmp_path / "s")), **failing)
    mem = EpisodicMemory(engine=engine.engine(), embedder=HashEmbedder(), splade=False)
    try:
        yield engine, mem
    finally:
        mem.close()
        engine.close()


def _texts(mem: EpisodicMemory) -> dict[str, str]:
    items = mem.store.read_recent(1000, user_id=USER, agent_id=AGENT)
    return {item["point_id"]: item["short_summary_text"] for item in items}


def test_an_embedder_failure_in_a_later_batch_writes_nothing(tmp_path: Path) -> None:
    mem = EpisodicMemory(path=tmp_path / "s", embedder=FailingEmbedder(ok_calls=2), splade=False)
    try:
        with pytest.raises(RuntimeError, match="embedding service unavailable"):
            mem.store.memorize_many(_episodes("late", 6), batch_size=2)
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0
    finally:
        mem.close()


def test_a_failed_write_takes_back_the_batches_written_before_it(tmp_path: Path) -> None:
    with _memory(tmp_path, fail_upserts=[3]) as (_, mem):
        kept = mem.store.memorize_many(_episodes("before", 2))  # upsert 1
        with pytest.raises(StorageFullError, match="disk is full"):
            # upserts 2 (written, then taken back), 3 (fails)
            mem.store.memorize_many(_episodes("failed", 4), batch_size=2)
        assert sorted(_texts(mem)) == sorted(kept)
        # A retry stores each episode once.
        again = mem.store.memorize_many(_episodes("failed", 4), batch_size=2)
        assert len(set(_texts(mem)) - set(kept)) == len(again) == 4


def test_a_failed_write_restores_the_episodes_it_had_replaced(tmp_path: Path) -> None:
    with _memory(tmp_path, fail_upserts=[3]) as (_, mem):
        ids = mem.store.memorize_many(_episodes("old", 2))  # upsert 1
        with pytest.raises(StorageFullError):
            # Batch 1 replaces both stored episodes (upsert 2), batch 2 fails (upsert 3).
            mem.store.memorize_many(_episodes("new", 4, ids=ids), batch_size=2)
        texts = _texts(mem)
        assert texts == {ids[0]: "old short 0", ids[1]: "old short 1"}
        # Their vectors are the old texts' again: recall finds them by the old words.
        found = mem.store.recall(
            user_id=USER, agent_id=AGENT, query="old short 1", with_stream_ranks=False
        )["previous_conversations"]
        assert found[0]["point_id"] == ids[1]
        assert found[0]["short_summary_text"] == "old short 1"


def test_when_taking_back_fails_the_error_names_what_stayed_stored(tmp_path: Path) -> None:
    with _memory(tmp_path, fail_upserts=[2], fail_deletes=True) as (_, mem):
        with pytest.raises(EngineError, match="taking them back failed too") as caught:
            mem.store.memorize_many(_episodes("stuck", 4), batch_size=2)
        stored = _texts(mem)
        assert len(stored) == 2
        message = str(caught.value)
        assert "after writing 2 of its episodes" in message
        assert all(pid in message for pid in stored)
        assert isinstance(caught.value.__cause__, StorageFullError)


def test_one_batch_needs_no_taking_back_and_still_writes_nothing_on_failure(
    tmp_path: Path,
) -> None:
    with _memory(tmp_path, fail_upserts=[1]) as (engine, mem):
        with pytest.raises(StorageFullError):
            mem.store.memorize_many(_episodes("one", 3))
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0
        assert engine.upserts == 1


def test_an_import_that_fails_midway_imports_nothing(tmp_path: Path) -> None:
    source = tmp_path / "episodes.jsonl"
    # Records without point ids (hand-written, not an export): a partial import retried
    # would store the first part twice.
    source.write_text("\n".join(json.dumps(ep) for ep in _episodes("imported", 300)) + "\n")
    engine = FailingWrites(open_engine(path=str(tmp_path / "s")), fail_upserts=[2])
    mem = EpisodicMemory(engine=engine.engine(), embedder=HashEmbedder(), splade=False)
    progress: list[int] = []
    try:
        with pytest.raises(StorageFullError):
            mem.store.import_(source, on_progress=progress.append)
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0
        assert progress == [256, 300]
        report = mem.store.import_(source)
        assert len(report.imported) == 300
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 300
    finally:
        mem.close()
        engine.close()
