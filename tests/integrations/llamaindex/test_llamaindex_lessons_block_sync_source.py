"""`LessonsMemoryBlock` works with the synchronous `SyncStepLessonMemory` too.

The block accepted any object with a `lessons_block`, then awaited what it returned: a
`SyncStepLessonMemory` returns the text itself, so every read failed, was logged, and the
agent never saw a lesson. A synchronous source is now called and used.
"""

from __future__ import annotations

from typing import Any

from episodex import SyncStepLessonMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import LessonsMemoryBlock


async def test_a_sync_lesson_memory_gives_its_block(
    second_attempt: tuple[SyncStepLessonMemory, dict[str, Any], str],
) -> None:
    lessons, page, task = second_attempt
    expected = lessons.lessons_block(page, task)
    assert "AVOID" in expected
    block = LessonsMemoryBlock(lessons=lessons, current_env=page)
    assert await block.aget([ChatMessage(role="user", content=task)]) == expected
