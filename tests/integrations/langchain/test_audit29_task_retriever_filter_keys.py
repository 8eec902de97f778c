"""A call's filter with a key no store takes is refused the same with or without a base filter.

`TaskEpisodeRetriever` merges a call's `filter` into its own by key. The merge turned every
key into a string, so `invoke(q, filter={1: "x"})` on a retriever with a filter searched on
a metadata key "1" (and found nothing, quietly), while the same call on a retriever without
one was refused with `ValidationError`. Now the call's keys reach the store as given, and
the store refuses them either way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import Episode, JSONLTaskStore, Task, TaskResult, ValidationError
from langchain_episodex import TaskEpisodeRetriever


async def test_a_bad_key_in_a_call_filter_is_refused_with_or_without_a_base_filter(
    tmp_path: Path,
) -> None:
    store = JSONLTaskStore(tmp_path / "tasks")
    try:
        task = Task(instruction="convert miles to km")
        await store.write(
            Episode(
                task=task,
                result=TaskResult(task_id=task.id_, content="done"),
                metadata={"user": "u1", "1": "x"},
            )
        )
        plain = TaskEpisodeRetriever(store=store)
        confined = TaskEpisodeRetriever(store=store, search_options={"filter": {"user": "u1"}})
        for retriever in (plain, confined):
            with pytest.raises(ValidationError, match="filter key"):
                await retriever.ainvoke("convert miles", filter={1: "x"})
        docs = await confined.ainvoke("convert miles", filter={"1": "x"})
        assert [d.metadata["metadata"]["user"] for d in docs] == ["u1"]
    finally:
        store.close()
