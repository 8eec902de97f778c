"""The recorder's functions are checked when they are given, never at their first call.

- `EpisodeRecorder(on_written_later=...)` took anything: a value that is not a function
  failed only when a late write called it, and that failure is logged, never raised, so the
  episodes written late were never handed to it (a LangGraph fork's left branch kept) and
  nobody was told. Now it is a `ConfigurationError` when the recorder is made.
- `forget_waiting(where)` with a `where` that is not a function returned 0 while nothing
  waited, and raised a bare `TypeError` once something did. Now it is a `ValidationError`
  every time, and nothing is taken out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from episodex import (
    ConfigurationError,
    EpisodeRecorder,
    EpisodicMemory,
    ValidationError,
    open_engine,
)
from episodex.testing import FailingEngine, HashEmbedder

from ._support import recorder_episode


@pytest.mark.parametrize("spill", [False, True], ids=["in-memory", "spill-file"])
async def test_a_forget_waiting_without_a_function_is_a_validation_error(
    tmp_path: Path, *, spill: bool
) -> None:
    engine = FailingEngine(open_engine(path=str(tmp_path / "store")), writes=True)
    async with EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False) as memory:
        recorder = EpisodeRecorder(memory, spill_path=tmp_path / "waiting.jsonl" if spill else None)
        where = cast("Any", "c1")
        with pytest.raises(ValidationError, match="where"):
            await recorder.forget_waiting(where)
        assert await recorder.record(**recorder_episode(1)) is None
        with pytest.raises(ValidationError, match="where"):
            await recorder.forget_waiting(where)
        assert recorder.stats().pending == 1
        engine.writes = False
        assert await recorder.flush() == 0
        assert len(await memory.read_recent(10, user_id="u1", agent_id="support")) == 1


def test_an_on_written_later_that_is_not_a_function_is_refused_when_made() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        with pytest.raises(ConfigurationError, match="on_written_later"):
            EpisodeRecorder(memory, on_written_later=cast("Any", "forget the branch"))
        assert EpisodeRecorder(memory, on_written_later=None).on_written_later is None
    finally:
        memory.close()
