"""Lessons mode works with the synchronous `SyncStepLessonMemory` too.

The middleware accepted any object with a `lessons_block`, then awaited what it returned: a
`SyncStepLessonMemory` returns the text itself, so every model call failed to read it, logged
a warning, and the agent never saw a lesson. A synchronous source is now called and used.
"""

from __future__ import annotations

import uuid

from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory, SyncStepLessonMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel

PAGE = {
    "url": "https://desk.example/tickets/7",
    "elements": ["[12] button 'Priority'", "[13] link 'Close'"],
}
TASK = "raise the priority"


def test_a_sync_lesson_memory_reaches_the_model(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    grader = ProgrammaticGrader(expected_actions=["click('12')"])
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=grader))
    try:
        lessons.init_episode("ticket-7", user_id=user, agent_id="web", task=TASK)
        lessons.record_step_start(env_pre=PAGE, internal_state="close it", action="click('13')")
        lessons.end_episode(final_env=PAGE)
        lessons.init_episode("ticket-7", user_id=user, agent_id="web", task=TASK)
        expected = lessons.lessons_block(PAGE, TASK)
        assert "AVOID" in expected

        steps = EpisodicMemoryMiddleware(
            mode="lessons", lessons=lessons, env=lambda state, runtime: PAGE
        )
        model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
        create_agent(model, middleware=[steps]).invoke({"messages": [HumanMessage(TASK)]})  # pyright: ignore[reportArgumentType]
        first = model.received[0][0]
        assert isinstance(first, SystemMessage) and first.content == expected
        assert steps.recall_failures == 0
    finally:
        lessons.close()
