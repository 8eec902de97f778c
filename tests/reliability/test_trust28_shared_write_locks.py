"""Stores on one storage share their write lock; a store another memory re-indexed refuses work.

A store checks which ids it may write (an id naming another tenant's point is refused), then
writes; a re-index catches up with a collection and switches it. Both ran under a lock of the
store object, so two objects on one folder (`EpisodicMemory(path=...)` run twice in a
notebook, a task store beside a memory on a shared engine) checked and wrote in between each
other. Every store now takes the lock of its storage and collection (`locks.write_lock`).

And a memory that another memory on the same folder re-indexed went on embedding with its own,
older models, into a collection that now held the new ones: its writes and its recalls compared
vectors of two models, silently. It now raises `EmbedderMismatchError` and writes nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    EmbedderMismatchError,
    Episode,
    EpisodicMemory,
    QdrantTaskStore,
    Task,
    TaskResult,
)
from episodex._engines.factory import open_engine
from episodex._engines.locks import write_lock
from episodex.testing import HashEmbedder

U, A = "u", "a"


def episode(text: str, conversation: str = "c") -> dict[str, Any]:
    return {
        "user_id": U,
        "agent_id": A,
        "conversation_id": conversation,
        "short_summary": text,
        "long_summary": text,
    }


def task_episode(i: int) -> Episode:
    task = Task(id_=f"t{i}", instruction=f"task {i}")
    return Episode(task=task, result=TaskResult(task_id=task.id_, content=f"done {i}"))


def blocked_while_held(lock: threading.RLock, write: Any) -> None:
    """`write` (run on a thread) waits while this thread holds `lock`, and runs once it is free."""
    done = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            write()
        except BaseException as exc:  # reported below, on the test's thread
            failure.append(exc)
        finally:
            done.set()

    with lock:
        worker = threading.Thread(target=run)
        worker.start()
        assert not done.wait(0.3), "the write did not wait for the other store's lock"
    assert done.wait(30)
    worker.join()
    assert not failure, failure


def test_two_memories_on_one_folder_share_the_write_lock(tmp_path: Path) -> None:
    first = EpisodicMemory(path=tmp_path / "one", embedder=HashEmbedder(), splade=False)
    second = EpisodicMemory(path=tmp_path / "one", embedder=HashEmbedder(), splade=False)
    other = EpisodicMemory(path=tmp_path / "two", embedder=HashEmbedder(), splade=False)
    try:
        assert first.store.write_lock is second.store.write_lock
        assert first.store.write_lock is not other.store.write_lock
        # One memory's write waits while another handle holds the lock, and then lands.
        blocked_while_held(
            first.store.write_lock, lambda: second.store.memorize_many([episode("kettle")])
        )
        assert first.store.count(user_id=U, agent_id=A) == 1
    finally:
        for mem in (first, second, other):
            mem.close()


def test_task_stores_on_one_engine_share_the_write_lock(tmp_path: Path) -> None:
    engine = open_engine(path=str(tmp_path / "store"))
    try:
        scoped = QdrantTaskStore(engine=engine, embedder=HashEmbedder(), user_id=U, agent_id=A)
        shared = QdrantTaskStore(engine=engine, embedder=HashEmbedder())
        assert scoped._write_lock is shared._write_lock  # pyright: ignore[reportPrivateUsage]
        blocked_while_held(
            scoped._write_lock,  # pyright: ignore[reportPrivateUsage]
            lambda: shared._write(task_episode(1), None),  # pyright: ignore[reportPrivateUsage]
        )
        assert [e.task.id_ for e in shared._recent(5)] == ["t1"]  # pyright: ignore[reportPrivateUsage]
        # Another collection of the same folder keeps its own lock.
        elsewhere = QdrantTaskStore(engine=engine, embedder=HashEmbedder(), collection="other")
        assert elsewhere._write_lock is not shared._write_lock  # pyright: ignore[reportPrivateUsage]
    finally:
        engine.close()


def test_server_engines_share_locks_by_address_and_prefix() -> None:
    def engine(url: str, prefix: str = "episodex_") -> Any:
        return open_engine(
            url=url, collection_prefix=prefix, client_options={"check_compatibility": False}
        )  # no request is made: nothing here calls the server

    one, same, slash = (
        engine("http://qdrant.local:6333"),
        engine("http://qdrant.local:6333"),
        engine("HTTP://qdrant.local:6333/"),
    )
    other_prefix, other_server = (
        engine("http://qdrant.local:6333", "team_"),
        engine("http://elsewhere:6333"),
    )
    local, local2 = open_engine(location=":memory:"), open_engine(location=":memory:")
    try:
        lock = write_lock(one, "episodes")
        assert write_lock(same, "episodes") is lock and write_lock(slash, "episodes") is lock
        assert write_lock(one, "task_episodes") is not lock
        assert write_lock(other_prefix, "episodes") is not lock
        assert write_lock(other_server, "episodes") is not lock
        # Each in-RAM engine is its own store.
        assert write_lock(local, "episodes") is not write_lock(local2, "episodes")
    finally:
        for e in (one, same, slash, other_prefix, other_server, local, local2):
            e.close()


async def test_a_memory_another_memory_reindexed_refuses_to_embed(tmp_path: Path) -> None:
    old, new = HashEmbedder(model_id="test/old"), HashEmbedder(model_id="test/new")
    first = EpisodicMemory(path=tmp_path, embedder=old, splade=False)
    second = EpisodicMemory(path=tmp_path, embedder=old, splade=False)
    try:
        await first.memorize(**episode("kettle refund"))
        await second.memorize(**episode("train tickets"))  # before the re-index: fine
        await first.reindex(new)
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            await second.memorize(**episode("written with the old model"))
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            await second.memorize_many([episode("a"), episode("b")])
        with pytest.raises(EmbedderMismatchError, match="re-indexed by another memory"):
            await second.recall(user_id=U, agent_id=A, query="kettle")
        # Nothing was written; the memory that re-indexed, and reading, work as before.
        assert await first.count(user_id=U, agent_id=A) == 2
        assert await second.count(user_id=U, agent_id=A) == 2
        await first.memorize(**episode("boiler service"))
        found = await first.recall(user_id=U, agent_id=A, query="kettle")
        assert found["previous_conversations"][0]["short_summary_text"] == "kettle refund"
    finally:
        first.close()
        second.close()
    # Opened again with the models the collection now holds, it works.
    again = EpisodicMemory(path=tmp_path, embedder=new, splade=False)
    try:
        await again.memorize(**episode("new model"))
        assert await again.count(user_id=U, agent_id=A) == 4
    finally:
        again.close()


def test_the_lock_is_reentrant_for_a_successor(tmp_path: Path) -> None:
    engine = open_engine(path=str(tmp_path))
    try:
        lock = write_lock(engine, "episodes")
        with lock, lock:  # a write handed on to a re-indexed store's successor takes it again
            assert write_lock(engine, "episodes") is lock
    finally:
        engine.close()
