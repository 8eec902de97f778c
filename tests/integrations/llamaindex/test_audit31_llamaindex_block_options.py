"""A memory block given an option it does not have refuses it.

`EpisodicMemoryBlock(..., deffered=True)` or `max_tokenz=5` was accepted and the option dropped
without a word (pydantic ignores unknown fields by default), so the block ran without the
deferral or the budget its author believed set; the LangChain classic memory refuses the same
mistake. Both blocks now refuse it with `ConfigurationError` naming the option.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConfigurationError, EpisodicMemory, StepLessonMemory
from episodex.testing import HashEmbedder
from llama_index.memory.episodex import EpisodicMemoryBlock, LessonsMemoryBlock


@pytest.mark.parametrize("option", ["deffered", "max_tokenz", "spill_file", "session_id"])
def test_the_episodes_block_refuses_an_option_it_does_not_have(tmp_path: Path, option: str) -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        with pytest.raises(ConfigurationError, match=option):
            EpisodicMemoryBlock(memory=memory, user_id="u", agent_id="a", **{option: 5})
        block = EpisodicMemoryBlock(memory=memory, user_id="u", agent_id="a", max_tokens=5)
        assert block.max_tokens == 5
    finally:
        memory.close()


def test_the_lessons_block_refuses_an_option_it_does_not_have() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    lessons = StepLessonMemory.from_memory(memory)
    try:
        with pytest.raises(ConfigurationError, match="current_enviroment"):
            LessonsMemoryBlock(lessons=lessons, current_enviroment={"url": "/"})  # pyright: ignore[reportCallIssue]
        assert LessonsMemoryBlock(lessons=lessons, current_env={"url": "/"}).lessons is lessons
    finally:
        memory.close()
