"""A closed JSONL task store cannot rewrite the file another store now writes.

`close()` releases the file for another store object or process, but `compact()` of the
closed store still rewrote the file from its own stale index: the other store's episodes
were silently lost. Every change now checks that the store is open and holds the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import Episode, JSONLTaskStore, StoreClosedError, Task, TaskResult


def _episode(instruction: str) -> Episode:
    task = Task(instruction=instruction)
    return Episode(task=task, result=TaskResult(task_id=task.id_, content="done"))


async def test_compact_after_close_raises_and_keeps_the_other_stores_episodes(
    tmp_path: Path,
) -> None:
    first = JSONLTaskStore(tmp_path)
    await first.write(_episode("Convert 3 miles to km"))
    first.close()
    second = JSONLTaskStore(tmp_path)
    await second.write(_episode("Book a table for two"))
    before = second.path.read_bytes()
    with pytest.raises(StoreClosedError):
        await first.compact()
    assert second.path.read_bytes() == before
    second.close()
    reopened = JSONLTaskStore(tmp_path)
    assert await reopened.count() == 2
    reopened.close()
