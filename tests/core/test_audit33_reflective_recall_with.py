"""`ReflectiveMemory(recall_with=...)` recalls only from a memory of its own user and agent.

`recall_with` is documented as "another memory over the same store", and nothing checked it: a
reflective memory writing to Alice's task store, given a `HybridMemory` over Bob's, recalled
Bob's episodes (his instructions, results and lessons) into Alice's prompts. A memory over
another user's or agent's store is now refused when the reflective memory is made; one over
the same user and agent (the same store object or another one) is taken as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    ConfigurationError,
    Episode,
    HybridMemory,
    JSONLTaskStore,
    QdrantTaskStore,
    RecencyMemory,
    ReflectiveMemory,
    Task,
    TaskResult,
)
from episodex.testing import HashEmbedder


async def _lesson(prompt: str) -> str:
    return "Check the units first."


def _episode(text: str) -> Episode:
    task = Task(instruction=text)
    return Episode(task=task, result=TaskResult(task_id=task.id_, content="done"))


@pytest.mark.parametrize("other", [("bob", "helper"), ("alice", "planner"), (None, None)])
async def test_a_memory_over_another_tenants_store_is_refused(
    tmp_path: Path, other: tuple[str | None, str | None]
) -> None:
    alice = QdrantTaskStore(
        location=":memory:", embedder=HashEmbedder(), user_id="alice", agent_id="helper"
    )
    bob = QdrantTaskStore(
        location=":memory:", embedder=HashEmbedder(), user_id=other[0], agent_id=other[1]
    )
    await bob.write(_episode("Bob's secret: convert his salary to euros"))
    with pytest.raises(ConfigurationError, match="recall_with"):
        ReflectiveMemory(alice, _lesson, recall_with=HybridMemory(bob))
    # And a JSONL store of another tenant, through the recency strategy.
    other_jsonl = JSONLTaskStore(tmp_path / "tasks", user_id=other[0], agent_id=other[1])
    mine = JSONLTaskStore(tmp_path / "tasks", user_id="alice", agent_id="helper")
    with pytest.raises(ConfigurationError, match="recall_with"):
        ReflectiveMemory(mine, _lesson, recall_with=RecencyMemory(other_jsonl))
    assert await alice.count() == 0 and await bob.count() == 1


async def test_a_memory_over_the_same_tenant_recalls_as_before(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path / "tasks", user_id="alice", agent_id="helper")
    memory = ReflectiveMemory(store, _lesson, recall_with=RecencyMemory(store, n=2))
    await memory.record(_episode("Convert 3 miles to km"))
    recalled = await memory.retrieve("Convert 5 miles to km")
    assert [e.task.instruction for e in recalled] == ["Convert 3 miles to km"]
    # Another store object of the same user and agent is taken too.
    elsewhere = QdrantTaskStore(
        location=":memory:", embedder=HashEmbedder(), user_id="alice", agent_id="helper"
    )
    assert ReflectiveMemory(store, _lesson, recall_with=HybridMemory(elsewhere)).recall_with
