"""Issue 14, item 15 (store side): a memory never opens a collection of another kind, and
`forget()` reports exactly how many episodes it deleted, even with writers running."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from episodex import (
    ConfigurationError,
    EpisodicMemory,
    QdrantTaskStore,
    StepLessonMemory,
    SyncEpisodicMemory,
)
from episodex.testing import HashEmbedder


def _episode(conversation: str, n: int) -> dict[str, object]:
    return {
        "short_summary": f"question {n}",
        "long_summary": f"question {n} and its answer",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": conversation,
    }


def test_task_store_and_lessons_refuse_the_episode_collection(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    try:
        memory.store.memorize_many([_episode("c", 1)])
        with pytest.raises(ConfigurationError, match="holds 'conversation_episodes' records"):
            QdrantTaskStore(memory=memory, collection="episodes")
        with pytest.raises(ConfigurationError, match="holds 'conversation_episodes' records"):
            StepLessonMemory(memory.engine, HashEmbedder(), collection="episodes")
        # The refusals wrote nothing: the episode collection is as it was.
        assert memory.store.count(user_id="u", agent_id="a") == 1
    finally:
        memory.close()


def test_task_and_lesson_collections_refuse_each_other(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    try:
        QdrantTaskStore(memory=memory, collection="tasks")
        StepLessonMemory(memory.engine, HashEmbedder(), collection="lessons")
        with pytest.raises(ConfigurationError, match="holds 'step_lessons' records"):
            QdrantTaskStore(memory=memory, collection="lessons")
        with pytest.raises(ConfigurationError, match="holds 'task_episodes' records"):
            StepLessonMemory(memory.engine, HashEmbedder(), collection="tasks")
    finally:
        memory.close()


def _write_until(
    mem: SyncEpisodicMemory, stop: threading.Event, conversation: str, written: list[int]
) -> None:
    while not stop.is_set():
        # Distinct episodes: writing an identical one again replaces it (its id is derived).
        mem.memorize_many([_episode(conversation, written[0] + i) for i in range(3)])
        written[0] += 3


@pytest.mark.parametrize("backend", ["edge", "memory"])
def test_forget_reports_what_it_deleted_while_others_write(backend: str, tmp_path: Path) -> None:
    mem = (
        SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
        if backend == "edge"
        else SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    )
    try:
        written = 0
        deleted = 0
        for round_ in range(15):
            mem.memorize_many([_episode("c", i) for i in range(120)])
            written += 120
            stop = threading.Event()
            extra = [0]
            thread = threading.Thread(target=_write_until, args=(mem, stop, f"w{round_}", extra))
            thread.start()
            try:
                deleted += mem.forget(user_id="u", agent_id="a", everything=True)
            finally:
                stop.set()
                thread.join()
            written += extra[0]
            # Every episode is either still stored or counted as deleted: none lost uncounted.
            assert written - deleted == mem.count(user_id="u", agent_id="a"), round_
    finally:
        mem.close()
