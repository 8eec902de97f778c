"""A task store's `embedded_text` holding a lone surrogate is refused with `ValidationError`.

`write(episode, embedded_text=...)` checked only that the text was a non-blank string: half a
character (a client that cut text by UTF-16 units) reached the JSONL line's UTF-8 encoding or
the embedder and failed with a raw `UnicodeEncodeError` on every store, where the episode's
own fields and a search query are refused by name. Nothing was stored then, and nothing is now.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import (
    BaseMemoryStore,
    Episode,
    JSONLTaskStore,
    QdrantTaskStore,
    Task,
    TaskResult,
    ValidationError,
)
from episodex.testing import HashEmbedder

KINDS = ["jsonl", "edge", "memory"]


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseMemoryStore]:
    kind = request.param
    opened: JSONLTaskStore | QdrantTaskStore
    if kind == "jsonl":
        opened = JSONLTaskStore(tmp_path / "tasks")
    elif kind == "edge":
        opened = QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
    else:
        opened = QdrantTaskStore(location=":memory:", embedder=HashEmbedder())
    yield opened
    opened.close()


def _episode() -> Episode:
    task = Task(instruction="Convert 3 miles to km")
    return Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km"))


async def test_an_embedded_text_with_a_lone_surrogate_is_refused_and_stores_nothing(
    store: BaseMemoryStore,
) -> None:
    with pytest.raises(ValidationError, match="embedded_text has a lone surrogate"):
        await store.write(_episode(), embedded_text="miles \ud83d to km")
    assert await store.count() == 0
    episode = _episode()
    await store.write(episode, embedded_text="miles \U0001f697 to km")  # a whole emoji is text
    assert [e.id_ for e in await store.read_recent(5)] == [episode.id_]
