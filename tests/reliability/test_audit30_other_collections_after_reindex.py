"""After a re-index, the store's task, lesson and item collections say how to open them.

`reindex` re-embeds the conversation episodes only; the task episodes, step lessons and
LangGraph items in the same folder keep the vectors of the model they were made with, so a
store opened on them through the re-indexed memory (its new embedder) is refused with
`EmbedderMismatchError`, as it must be. Its message told the user to "export and re-import
into a new store to re-embed", which task and item stores cannot do (they have no export),
and did not say that `episodex reindex` leaves them as they are. Each message now names the
way that works for its collection.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    EmbedderMismatchError,
    Episode,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    QdrantTaskStore,
    StepLessonMemory,
    Task,
)
from episodex.testing import HashEmbedder

OLD = HashEmbedder(dimension=32, model_id="test/old")
NEW = HashEmbedder(dimension=32, model_id="test/new")  # same dimension, another model


async def test_each_collection_left_on_the_old_model_says_what_works(tmp_path: Path) -> None:
    memory = EpisodicMemory(tmp_path / "store", embedder=OLD, splade=False)
    try:
        await memory.memorize(
            short_summary="refund for order 7",
            long_summary="the user asked for a refund",
            user_id="u",
            agent_id="a",
            conversation_id="c",
        )
        tasks = QdrantTaskStore(memory=memory)
        await tasks.write(Episode(id_="e1", task=Task(instruction="convert 3 miles to km")))
        StepLessonMemory.from_memory(memory)
        ref = ItemRef("u", "a", ("prefs",), "k")
        ItemStore(memory.engine, memory.embedder).write([ItemPut(ref, {"t": "tea"}, text="tea")])
        await memory.reindex(NEW)
        assert memory.embedder is NEW

        with pytest.raises(EmbedderMismatchError) as tasks_error:
            QdrantTaskStore(memory=memory)
        with pytest.raises(EmbedderMismatchError) as lessons_error:
            StepLessonMemory.from_memory(memory)
        with pytest.raises(EmbedderMismatchError) as items_error:
            ItemStore(memory.engine, memory.embedder)
        for error in (tasks_error, lessons_error, items_error):
            message = str(error.value)
            assert "'test/old'" in message and "conversation episodes only" in message
        assert "export" not in str(tasks_error.value) and "export" not in str(items_error.value)
        assert "store_memories" in str(lessons_error.value)
        # Opened with the model they were made with, they still answer.
        hits = await QdrantTaskStore(memory=memory, embedder=OLD).search("miles to km", k=1)
        assert [e.id_ for e in hits] == ["e1"]
    finally:
        memory.close()
