"""A read whose query text cannot be encoded (a lone surrogate) is a `ValidationError`, up front.

Half an emoji (a UTF-16 surrogate without its pair, as a client that cuts text by UTF-16 units
sends it) cannot be encoded as UTF-8, so no tokenizer can read it. A recall with such a query
raised the bundled models' `EmbeddingError`, which the adapters count and log as an outage of
the memory, or, with only the BM25 stream weighted, a raw `UnicodeEncodeError`; so did the item
store's search (under the LangGraph store), the task stores' searches and a lesson lookup by
the agent's state. Each is now a `ValidationError` naming the argument before any model runs,
and the store is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    Embedder,
    Episode,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    JSONLTaskStore,
    ProgrammaticGrader,
    QdrantTaskStore,
    StepLessonMemory,
    SyncStepLessonMemory,
    Task,
    TaskResult,
    ValidationError,
    default_embedder,
)
from langchain_episodex import EpisodexStore

from ._support import open_memory, snapshot

HALF_EMOJI = "refund for my order \ud83d"
REFUSED = r"query has a lone surrogate \(\\ud83d\) at position 20"
BM25_ONLY: dict[str, Any] = {
    "short_weight": 0.0,
    "long_weight": 0.0,
    "splade_weight": 0.0,
    "splade_short_weight": 0.0,
    "bm25_weight": 1.0,
}
TENANT: dict[str, Any] = {"user_id": "alice", "agent_id": "a1"}


@pytest.fixture(scope="module")
def real_embedder() -> Embedder:
    return default_embedder()


@pytest.fixture
def memory(backend: str, tmp_path: Path, real_embedder: Embedder) -> Iterator[EpisodicMemory]:
    """A memory with the bundled dense and SPLADE models, holding alice's and bob's episodes."""
    with open_memory(backend, tmp_path, embedder=real_embedder) as mem:
        mem.store.memorize_many(
            [
                {
                    "short_summary": "refund for order 1234",
                    "long_summary": "the user asked for a refund; the agent issued it",
                    "user_id": user,
                    "agent_id": agent,
                    "conversation_id": "c1",
                }
                for user in ("alice", "bob")
                for agent in ("a1", "a2")
            ]
        )
        yield mem


@pytest.mark.parametrize("options", [{}, BM25_ONLY], ids=["every stream", "bm25 only"])
async def test_a_recall_query_that_cannot_be_encoded_is_refused(
    memory: EpisodicMemory, options: dict[str, Any]
) -> None:
    before = snapshot(memory)
    with pytest.raises(ValidationError, match=REFUSED):
        await memory.recall(query=HALF_EMOJI, conversation_id="c2", **TENANT, **options)
    with pytest.raises(ValidationError, match=REFUSED):
        await memory.recall_block(query=HALF_EMOJI, **TENANT, **options)
    assert snapshot(memory) == before
    # The same query without the half character recalls as ever.
    found = await memory.recall(query=HALF_EMOJI[:-1], **TENANT, **options)
    assert [e["user_id"] for e in found["previous_conversations"]] == ["alice"]


@pytest.mark.parametrize(
    ("dense", "bm25"), [(0.3, 0.7), (0.0, 1.0)], ids=["dense and bm25", "bm25 only"]
)
async def test_an_item_search_query_that_cannot_be_encoded_is_refused(
    memory: EpisodicMemory, dense: float, bm25: float
) -> None:
    items = ItemStore(memory.engine, memory.embedder)
    ref = ItemRef("alice", "a1", ("alice", "notes"), "refund")
    items.write([ItemPut(ref, {"text": "refund for order 1234"}, text="refund for order 1234")])
    with pytest.raises(ValidationError, match=REFUSED):
        items.search(
            user_id="alice",
            agent_id="a1",
            namespace_prefix=("alice",),
            query=HALF_EMOJI,
            dense_weight=dense,
            bm25_weight=bm25,
        )
    # Through LangGraph's store, sync and async.
    store = EpisodexStore(items, agent_id="a1", dense_weight=dense, bm25_weight=bm25)
    with pytest.raises(ValidationError, match=REFUSED):
        store.search(("alice",), query=HALF_EMOJI)
    with pytest.raises(ValidationError, match=REFUSED):
        await store.asearch(("alice",), query=HALF_EMOJI)
    assert [hit.key for hit in store.search(("alice",), query=HALF_EMOJI[:-1])] == ["refund"]
    assert items.count(user_id="alice", agent_id="a1") == 1


async def test_a_task_search_query_that_cannot_be_encoded_is_refused(
    memory: EpisodicMemory, tmp_path: Path
) -> None:
    task = Task(instruction="refund for order 1234")
    episode = Episode(task=task, result=TaskResult(task_id=task.id_, content="refunded"))
    qdrant = QdrantTaskStore(memory=memory, user_id="alice", agent_id="a1")
    with JSONLTaskStore(tmp_path / "tasks", user_id="alice", agent_id="a1") as jsonl:
        for store in (qdrant, jsonl):
            await store.write(episode)
            for mode in ({}, {"mode": "bm25"}) if store is qdrant else ({},):
                with pytest.raises(ValidationError, match=REFUSED):
                    await store.search(HALF_EMOJI, **mode)  # pyright: ignore[reportArgumentType]
            assert [e.id_ for e in await store.search(HALF_EMOJI[:-1])] == [episode.id_]
            assert await store.count() == 1


def test_a_lesson_state_that_cannot_be_encoded_is_refused(real_embedder: Embedder) -> None:
    memory = EpisodicMemory(location=":memory:", embedder=real_embedder, splade=False)
    page = {"url": "https://helpdesk.example/tickets/7", "elements": ["[12] button 'Priority'"]}
    grader = ProgrammaticGrader(expected_actions=["click('12')"])
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=grader))
    try:
        lessons.init_episode("ticket-7", user_id="alice", agent_id="web", task="set priority")
        lessons.record_step_start(env_pre=page, internal_state="delete it", action="click('44')")
        lessons.end_episode(final_env=page)
        lessons.init_episode("ticket-7", user_id="alice", agent_id="web", task="set priority")
        with pytest.raises(ValidationError, match=r"current_state has a lone surrogate"):
            lessons.lessons_block(page, HALF_EMOJI)
        assert "AVOID" in lessons.lessons_block(page, HALF_EMOJI[:-1])
        assert lessons.count("ticket-7", user_id="alice", agent_id="web") == 1
    finally:
        lessons.close()
        memory.close()
