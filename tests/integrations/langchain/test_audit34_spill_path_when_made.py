"""A spill path that is no path, or a blank one, is refused with a typed error when made.

`EpisodicMemoryMiddleware(spill_path=...)`, `EpisodicConversationMemory(spill_path=...)` and
the `EpisodeRecorder` behind them raised a bare `TypeError` for a number or bytes, and took a
blank path (the current folder): found out only when the store failed and the episode waiting
could not be written to the file, so what the option promised (no waiting episode lost by a
restart) was silently not there. A folder in the file's place is still handled when spilling
(tests/reliability/test_audit29_recorder_counters.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodeRecorder, EpisodicMemory, open_engine
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodicConversationMemory, EpisodicMemoryMiddleware


@pytest.fixture
def hashed() -> Iterator[EpisodicMemory]:
    memory = EpisodicMemory(
        engine=open_engine(location=":memory:"), embedder=HashEmbedder(), splade=False
    )
    yield memory
    memory.close()


BAD_PATHS: list[Any] = ["", "   ", 5, 2.5, b"spill.jsonl"]


def test_the_middleware_refuses_a_spill_path_that_holds_no_file(hashed: EpisodicMemory) -> None:
    for path in BAD_PATHS:
        with pytest.raises(ConfigurationError, match="spill_path"):
            EpisodicMemoryMiddleware(hashed, agent_id="support", spill_path=path)


def test_the_classic_memory_refuses_a_spill_path_that_holds_no_file(
    hashed: EpisodicMemory, tmp_path: Path
) -> None:
    # Bytes are read as text by pydantic, as for every field of this model: a path then.
    for path in BAD_PATHS[:-1]:
        with pytest.raises(ConfigurationError, match="spill_path"):
            EpisodicConversationMemory(memory=hashed, user_id="u1", spill_path=path)


def test_the_recorder_refuses_a_spill_path_that_holds_no_file(hashed: EpisodicMemory) -> None:
    for path in BAD_PATHS:
        with pytest.raises(ConfigurationError, match="spill_path"):
            EpisodeRecorder(hashed, spill_path=path)


async def test_a_file_path_is_still_taken_and_spilled_to(
    hashed: EpisodicMemory, tmp_path: Path
) -> None:
    spill = tmp_path / "new" / "spill.jsonl"
    middleware = EpisodicMemoryMiddleware(hashed, agent_id="support", spill_path=spill)
    assert middleware.recorder is not None and middleware.recorder.spill_path == spill
    chat = EpisodicConversationMemory(
        memory=hashed, user_id="u1", agent_id="support", spill_path=str(spill)
    )
    await chat.asave_context({"input": "Where is my refund?"}, {"output": "Sent on Monday."})
    assert chat.stats().recorded == 1
