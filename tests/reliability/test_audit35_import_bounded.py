"""An import holds one batch of episodes and vectors at a time, and stays all or nothing.

`import_` read its file a chunk at a time, but kept every parsed episode and its vectors
(about 4.5 KB each) until one final write of them all: a big export held all of it at once.
It now checks the file first (holding no episode), then embeds and writes it a batch at a
time under the write lock; a failure in a later batch (a write, the embedder, the file)
takes back the batches already written, so the call still ends stored or with nothing
written. The engine is the real embedded one, with one write made to fail.
"""

from __future__ import annotations

import io
import json
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pytest
from episodex import (
    Engine,
    EpisodicMemory,
    ImportFileError,
    StorageFullError,
    open_engine,
)
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"
BATCH = 256


class CountingEmbedder(HashEmbedder):
    """Counts the episodes it embedded (two texts each); raises after `ok_calls` calls."""

    def __init__(self, ok_calls: int | None = None) -> None:
        super().__init__()
        self.ok_calls = ok_calls
        self.episodes = 0

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.ok_calls is not None:
            if self.ok_calls <= 0:
                raise RuntimeError("embedding service unavailable")
            self.ok_calls -= 1
        self.episodes += len(texts) // 2
        return super().embed_documents(texts)


class WatchedWrites:
    """The real embedded engine; records, at each upsert, how many episodes were embedded."""

    def __init__(
        self, inner: Engine, embedder: CountingEmbedder, *, fail_upserts: Sequence[int] = ()
    ) -> None:
        self.inner = inner
        self.embedder = embedder
        self.fail_upserts = set(fail_upserts)
        self.upserts = 0
        self.written = 0  # episodes written by upserts that returned
        self.held: list[int] = []  # embedded but not yet written, at each upsert

    def engine(self) -> Engine:
        return cast(Engine, self)

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.upserts += 1
        episodes = sum(1 for p in points if "pending_write" not in p.payload)
        self.held.append(self.embedder.episodes - self.written)
        if self.upserts in self.fail_upserts:
            raise StorageFullError("writing refused: the disk is full (injected)")
        self.inner.upsert(collection, points)
        self.written += episodes

    def delete(self, collection: str, flt: Filter) -> None:
        self.inner.delete(collection, flt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def _memory(
    tmp_path: Path, *, ok_calls: int | None = None, fail_upserts: Sequence[int] = ()
) -> Generator[tuple[WatchedWrites, EpisodicMemory]]:
    embedder = CountingEmbedder(ok_calls)
    engine = WatchedWrites(
        open_engine(path=str(tmp_path / "s")), embedder, fail_upserts=fail_upserts
    )
    mem = EpisodicMemory(engine=engine.engine(), embedder=embedder, splade=False)
    try:
        yield engine, mem
    finally:
        mem.close()
        engine.inner.close()


def _records(tag: str, n: int, *, ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        record: dict[str, Any] = {
            "user_id": USER,
            "agent_id": AGENT,
            "conversation_id": f"conv-{tag}",
            "short_summary": f"{tag} short {i}",
            "long_summary": f"{tag} long {i}",
        }
        if i < len(ids):
            record["point_id"] = ids[i]
        out.append(record)
    return out


def _file(tmp_path: Path, records: list[dict[str, Any]], extra: str = "") -> Path:
    path = tmp_path / "episodes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + extra, encoding="utf-8")
    return path


def _texts(mem: EpisodicMemory) -> dict[str, str]:
    items = mem.store.read_recent(5000, user_id=USER, agent_id=AGENT)
    return {item["point_id"]: item["short_summary_text"] for item in items}


class OneWayReader(io.RawIOBase):
    """A binary stream that cannot seek: a pipe."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        out = self._data.read(len(buffer))
        buffer[: len(out)] = out
        return len(out)


def test_an_import_holds_at_most_one_batch_of_vectors(tmp_path: Path) -> None:
    n = 3 * BATCH + 10
    with _memory(tmp_path) as (engine, mem):
        report = mem.store.import_(_file(tmp_path, _records("big", n)))
        assert len(report.imported) == n
        assert mem.store.count(user_id=USER, agent_id=AGENT) == n
        assert engine.upserts >= 4
        assert max(engine.held) <= BATCH


def test_an_import_from_a_stream_that_cannot_seek_is_bounded_too(tmp_path: Path) -> None:
    n = 2 * BATCH + 3
    data = "".join(json.dumps(r) + "\n" for r in _records("piped", n)).encode()
    with _memory(tmp_path) as (engine, mem):
        report = mem.store.import_(io.BufferedReader(OneWayReader(data)))
        assert len(report.imported) == n
        assert sorted(_texts(mem).values()) == sorted(f"piped short {i}" for i in range(n))
        assert max(engine.held) <= BATCH


def test_a_failed_write_in_a_later_batch_takes_back_the_import(tmp_path: Path) -> None:
    with _memory(tmp_path, fail_upserts=[4]) as (_, mem):
        old = mem.store.memorize_many(_records("old", 2))  # upsert 1
        # Upserts 2 and 3 are written (the first replaces both stored episodes), 4 fails.
        path = _file(tmp_path, _records("new", 3 * BATCH, ids=old))
        with pytest.raises(StorageFullError, match="disk is full"):
            mem.store.import_(path)
        assert _texts(mem) == {old[0]: "old short 0", old[1]: "old short 1"}
        found = mem.store.recall(
            user_id=USER, agent_id=AGENT, query="old short 1", with_stream_ranks=False
        )["previous_conversations"]
        assert found[0]["point_id"] == old[1]
        # Importing again stores each episode once.
        report = mem.store.import_(path)
        assert len(report.imported) == len(_texts(mem)) == 3 * BATCH


def test_an_embedder_failure_in_a_later_batch_takes_back_the_import(tmp_path: Path) -> None:
    with _memory(tmp_path, ok_calls=2) as (engine, mem):
        with pytest.raises(RuntimeError, match="embedding service unavailable"):
            mem.store.import_(_file(tmp_path, _records("late", 3 * BATCH)))
        assert engine.written == 2 * BATCH  # two batches were written, then taken back
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0


def test_a_bad_last_line_embeds_and_writes_nothing(tmp_path: Path) -> None:
    with _memory(tmp_path) as (engine, mem):
        path = _file(tmp_path, _records("strict", 2 * BATCH + 1), extra="{not json\n")
        with pytest.raises(ImportFileError, match="1 bad line"):
            mem.store.import_(path)
        assert engine.embedder.episodes == 0
        assert engine.upserts == 0
        # With errors="skip" the valid lines are imported, the bad one reported.
        report = mem.store.import_(path, errors="skip")
        assert len(report.imported) == 2 * BATCH + 1
        assert [line for line, _ in report.skipped] == [2 * BATCH + 2]


def test_a_line_owned_by_another_user_in_a_later_batch_is_found_before_writing(
    tmp_path: Path,
) -> None:
    with _memory(tmp_path) as (engine, mem):
        theirs = mem.store.memorize_many([{**_records("theirs", 1)[0], "user_id": "other"}])
        records = _records("mine", 2 * BATCH + 5)
        records[-1]["point_id"] = theirs[0]
        path = _file(tmp_path, records)
        upserts = engine.upserts
        with pytest.raises(ImportFileError, match="belongs to"):
            mem.store.import_(path)
        assert engine.upserts == upserts
        assert mem.store.count(user_id=USER, agent_id=AGENT) == 0
        report = mem.store.import_(path, errors="skip")
        assert len(report.imported) == 2 * BATCH + 4
        assert [line for line, _ in report.skipped] == [2 * BATCH + 5]
        assert mem.store.get(theirs[0], user_id="other", agent_id=AGENT)["short_summary_text"] == (
            "theirs short 0"
        )
