"""`render_memories` given its memories as a one-pass iterable recalls from them.

It checked the memories with `all(...)`, which used up a generator, then recalled from what was
left of it: nothing. The block came back `""` as if no memory had anything to say, with no
error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    Episode,
    JSONLTaskStore,
    RecencyMemory,
    Task,
    TaskMemory,
    ValidationError,
    render_memories,
)


async def test_a_generator_of_memories_is_recalled_from(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        await store.write(Episode(task=Task(instruction="Convert 3 miles to km")))
        memory = RecencyMemory(store)
        expected = await render_memories([memory], "Convert 5 miles")
        assert "Convert 3 miles to km" in expected
        memories: list[TaskMemory] = [memory]
        assert await render_memories((m for m in memories), "Convert 5 miles") == expected
        assert await render_memories(iter(memories), "Convert 5 miles") == expected


async def test_a_non_memory_in_a_generator_is_still_refused(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        items: list[object] = [RecencyMemory(store), "not a memory"]
        with pytest.raises(ValidationError, match="list of memories"):
            await render_memories((m for m in items), "x")  # type: ignore[misc]
