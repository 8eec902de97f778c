"""A strategy configured so that every call would fail is refused when it is made.

`ReflectiveMemory` checked only the names in its template: a format spec or a conversion that
cannot apply to text (`{instruction:d}`, `{instruction!x}`), or a nested field
(`{instruction:{result}}`, whose spec is then the episode's own result), was accepted, and every
`record` then failed to build the prompt, which `record` takes for an LLM failure: each episode
was stored without its lesson, with only a log warning.

`SimilarityMemory` and `HybridMemory` passed `search_kwargs` to the store at every recall
without looking at them: an option the store does not take (`mode` on a `JSONLTaskStore`), or a
bad value (`score_threshold="high"`), made every recall raise, and the framework adapters, which
survive a memory failure, then ran every task with no memories at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    Episode,
    HybridMemory,
    JSONLTaskStore,
    QdrantTaskStore,
    ReflectiveMemory,
    SimilarityMemory,
    Task,
    TaskResult,
)
from episodex.testing import HashEmbedder


async def _lesson(prompt: str) -> str:
    return "Check the units first."


@pytest.mark.parametrize(
    "template",
    [
        "Task: {instruction:d}",
        "Task: {instruction!x}",
        "Task: {instruction:{result}}",
        "Task: {instruction:{unknown}}",
        "Task: {instruction} in {rollout:,}",
    ],
)
def test_a_template_that_cannot_be_filled_is_refused(tmp_path: Path, template: str) -> None:
    with JSONLTaskStore(tmp_path) as store, pytest.raises(ConfigurationError, match="template"):
        ReflectiveMemory(store, _lesson, template=template)


async def test_a_template_with_specs_that_apply_to_text_still_works(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        memory = ReflectiveMemory(
            store, _lesson, template="Task: {instruction!r:>5}\nResult: {result:.200}"
        )
        task = Task(instruction="Convert 3 miles to km")
        stored = await memory.record(
            Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km"))
        )
        assert memory.reflection_failures == 0
        assert stored.additional_data == {"reflection": "Check the units first."}


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("jsonl", {"mode": "dense"}),
        ("jsonl", {"score_threshold": "high"}),
        ("jsonl", {"filter": {"user": True}}),
        ("jsonl", {"k": 5}),
        ("qdrant", {"mode": "semantic"}),
        ("qdrant", {"rrf_k": 0}),
        ("qdrant", {"dense_weight": -1.0}),
        ("qdrant", {"filter": "user=u1"}),
        ("qdrant", {"limit": 3}),
    ],
)
def test_search_kwargs_the_store_refuses_are_refused_at_construction(
    tmp_path: Path, kind: str, kwargs: dict[str, Any]
) -> None:
    store = (
        JSONLTaskStore(tmp_path)
        if kind == "jsonl"
        else QdrantTaskStore(location=":memory:", embedder=HashEmbedder())
    )
    try:
        with pytest.raises(ConfigurationError, match="search_kwargs"):
            SimilarityMemory(store, search_kwargs=kwargs)
        with pytest.raises(ConfigurationError, match="search_kwargs"):
            HybridMemory(store, search_kwargs=kwargs)
    finally:
        store.close()


async def test_search_kwargs_the_store_takes_are_accepted(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        task = Task(instruction="Convert 3 miles to km")
        await store.write(Episode(task=task, metadata={"user": "u1"}))
        memory = SimilarityMemory(store, search_kwargs={"filter": {"user": "u1"}})
        assert [e.task.instruction for e in await memory.retrieve("miles to km")] == [
            task.instruction
        ]
