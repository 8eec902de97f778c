"""`LessonsMemoryBlock` works with the synchronous `SyncStepLessonMemory` too.

The block accepted any object with a `lessons_block`, then awaited what it returned: a
`SyncStepLessonMemory` returns the text itself, so every read failed, was logged, and the
agent never saw a lesson. A synchronous source is now called and used.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory, SyncStepLessonMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import LessonsMemoryBlock

PAGE = {
    "url": "https://helpdesk.example/tickets/7",
    "elements": ["[12] button 'Priority'", "[44] button 'Delete'"],
}
TASK = "Set the priority of ticket 7 to High"


@pytest.fixture
def lessons(memory: EpisodicMemory, user: str) -> Iterator[SyncStepLessonMemory]:
    """A second attempt in progress, started in this thread, after a graded first one."""
    grader = ProgrammaticGrader(expected_actions=["click('12')"])
    sync = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=grader))
    try:
        sync.init_episode("ticket-7-sync", user_id=user, agent_id="web", task=TASK)
        sync.record_step_start(env_pre=PAGE, internal_state="delete it", action="click('44')")
        sync.end_episode(final_env=PAGE)
        sync.init_episode("ticket-7-sync", user_id=user, agent_id="web", task=TASK)
        yield sync
    finally:
        sync.close()


async def test_a_sync_lesson_memory_gives_its_block(lessons: SyncStepLessonMemory) -> None:
    expected = lessons.lessons_block(PAGE, TASK)
    assert "AVOID" in expected
    block = LessonsMemoryBlock(lessons=lessons, current_env=PAGE)
    assert await block.aget([ChatMessage(role="user", content=TASK)]) == expected
