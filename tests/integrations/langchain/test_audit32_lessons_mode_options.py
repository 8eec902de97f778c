"""Lessons mode refuses the options of episodes mode, as it refuses `search_tool=True`.

`EpisodicMemoryMiddleware(mode="lessons", max_tokens=200, ...)` was taken and the budget never
applied: every model call got the whole REPEAT/AVOID block, however long, while the caller
believed it capped. `recall_options=`, `reflection_model=`, `spill_path=` and `deferred=True`
were dropped the same way. Each is now a `ConfigurationError` naming the mode it is for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, StepLessonMemory
from langchain_episodex import EpisodicMemoryMiddleware


def _page(state: Any, runtime: Any) -> dict[str, Any]:
    return {"url": "https://app.test/tickets"}


def _summary(prompt: str) -> str:
    return "a summary"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_tokens", 200),
        ("max_tokens", 0),
        ("recall_options", {"limit": 3}),
        ("reflection_model", _summary),
        ("spill_path", "spill.jsonl"),
        ("deferred", True),
    ],
)
def test_an_episodes_option_in_lessons_mode_is_refused(
    memory: EpisodicMemory, tmp_path: Path, option: str, value: Any
) -> None:
    if option == "spill_path":
        value = tmp_path / value
    lessons = StepLessonMemory.from_memory(memory)
    with pytest.raises(ConfigurationError, match=f"{option}.*mode='episodes'"):
        EpisodicMemoryMiddleware(mode="lessons", lessons=lessons, env=_page, **{option: value})
    if option == "spill_path":
        assert not value.exists()


def test_lessons_mode_without_them_is_built(memory: EpisodicMemory) -> None:
    lessons = StepLessonMemory.from_memory(memory)
    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=_page, max_tokens=None, deferred=False
    )
    assert steps.lessons is lessons
