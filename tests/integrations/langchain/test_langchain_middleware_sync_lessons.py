"""Lessons mode works with the synchronous `SyncStepLessonMemory` too.

The middleware accepted any object with a `lessons_block`, then awaited what it returned: a
`SyncStepLessonMemory` returns the text itself, so every model call failed to read it, logged
a warning, and the agent never saw a lesson. A synchronous source is now called and used.
"""

from __future__ import annotations

from typing import Any

from episodex import SyncStepLessonMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel


def test_a_sync_lesson_memory_reaches_the_model(
    second_attempt: tuple[SyncStepLessonMemory, dict[str, Any], str],
) -> None:
    lessons, page, task = second_attempt
    expected = lessons.lessons_block(page, task)
    assert "AVOID" in expected

    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=lambda state, runtime: page
    )
    model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
    create_agent(model, middleware=[steps]).invoke({"messages": [HumanMessage(task)]})  # pyright: ignore[reportArgumentType]
    first = model.received[0][0]
    assert isinstance(first, SystemMessage) and first.content == expected
    assert steps.recall_failures == 0
