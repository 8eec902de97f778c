"""An async progress callback is refused before any work, not silently never run.

`reindex` and `import_` call `on_progress` from the worker thread they run in. Given an
`async def` function (natural beside `await memory.reindex(...)`), each call only made a
coroutine that nothing awaited: no progress was ever reported, and Python warned "coroutine
... was never awaited" (an error where warnings are errors). Such a callback now raises
`ValidationError` before anything is read, embedded or written.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder

OLD = HashEmbedder(dimension=32, model_id="test/old")
NEW = HashEmbedder(dimension=48, model_id="test/new")
EPISODE = {
    "short_summary": "kettle refund",
    "long_summary": "the user asked for a kettle refund",
    "user_id": "u",
    "agent_id": "a",
    "conversation_id": "c",
}


async def _progress(done: int, total: int = 0) -> None:
    raise AssertionError("never called")


async def test_an_async_progress_callback_is_refused_by_reindex(tmp_path: Path) -> None:
    path = tmp_path / "store"
    memory = EpisodicMemory(path, embedder=OLD, splade=False)
    try:
        await memory.memorize_many([EPISODE])
        with pytest.raises(ValidationError, match="on_progress"):
            await memory.reindex(NEW, on_progress=_progress)
        assert memory.embedder is OLD
        assert sorted(p.name for p in path.iterdir() if p.is_dir()) == ["episodes"]
        assert await memory.count(user_id="u", agent_id="a") == 1
    finally:
        memory.close()


async def test_an_async_progress_callback_is_refused_by_import() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=OLD, splade=False)
    try:
        source = io.StringIO(json.dumps(EPISODE) + "\n")
        with pytest.raises(ValidationError, match="on_progress"):
            await memory.import_(source, on_progress=_progress)
        assert await memory.count(user_id="u", agent_id="a") == 0
    finally:
        memory.close()
