"""A closed memory refuses with `StoreClosedError` on every backend, not only the embedded one.

On Qdrant Edge a closed `EpisodicMemory` raised `StoreClosedError`; on qdrant-client's
`:memory:` mode (and a server) the engine raised a plain `EngineError`, so code that catches
`StoreClosedError` to reopen a store missed it there. The engine now raises `StoreClosedError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from episodex import StepLessonMemory, StoreClosedError
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory

EPISODE: dict[str, Any] = {
    "short_summary": "Asked for a refund",
    "long_summary": "User: refund? Assistant: done.",
    "user_id": "u1",
    "agent_id": "support",
    "conversation_id": "c1",
}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_closed_memory_refuses_with_store_closed_error(
    backend: str, tmp_path: Path
) -> None:
    with open_memory(backend, tmp_path, embedder=HashEmbedder(), splade=False) as memory:
        point_id = await memory.memorize(**EPISODE)
        lessons = StepLessonMemory.from_memory(memory)
        memory.close()
        memory.close()  # closing twice is fine
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "memorize": lambda: memory.memorize(**EPISODE),
            "recall": lambda: memory.recall(user_id="u1", agent_id="support", query="refund"),
            "count": lambda: memory.count(user_id="u1", agent_id="support"),
            "read_recent": lambda: memory.read_recent(3, user_id="u1", agent_id="support"),
            "get": lambda: memory.get(point_id, user_id="u1", agent_id="support"),
            "forget": lambda: memory.forget(user_id="u1", agent_id="support", conversation_id="c1"),
            "lessons": lambda: lessons.count("s1", user_id="u1", agent_id="support"),
        }
        for name, call in calls.items():
            with pytest.raises(StoreClosedError):
                await call()
                pytest.fail(f"{name} of a closed {backend} memory did not raise")
