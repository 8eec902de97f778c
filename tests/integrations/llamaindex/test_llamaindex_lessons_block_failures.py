"""A failing lesson store never costs a LlamaIndex agent its answer.

`Memory.aget` asks every block for its content before each LLM call. `EpisodicMemoryBlock`
already answered without memory when recall failed; `LessonsMemoryBlock` let the lesson
memory's error out, so the agent's run failed before the LLM was called. It now logs the
failure and gives no lessons block. The engine is the real in-RAM one, made to fail.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from episodex import (
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
)
from episodex.testing import FailingEngine
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory
from llama_index.memory.episodex import LessonsMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

PAGE = {"url": "https://helpdesk.example/tickets/7", "elements": ["[12] button 'Priority'"]}
TASK = "Set the priority of ticket 7 to High"


async def block_text(lessons: StepLessonMemory) -> str:
    return await LessonsMemoryBlock(lessons=lessons, current_env=PAGE).aget([])


async def test_an_agent_answers_when_the_lessons_cannot_be_read(
    failing: tuple[EpisodicMemory, FailingEngine],
    make_llm: Any,
    chat_engine: AsyncEngine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory, engine = failing
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    await lessons.init_episode("ticket-7", user_id="u", agent_id="web", task=TASK)
    await lessons.record_step_start(
        env_pre=PAGE, internal_state="Open the priority menu", action="click('12')"
    )
    await lessons.end_episode(final_env=PAGE)
    # Rep 2 is the first attempt that is given lessons.
    await lessons.init_episode("ticket-7", user_id="u", agent_id="web", task=TASK)
    assert "REPEAT" in await block_text(lessons)
    block = LessonsMemoryBlock(lessons=lessons, current_env=PAGE)
    chat = Memory.from_defaults(
        session_id="s",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm(reply="Done: priority set to High.")
    engine.reads = True
    answer = await FunctionAgent(llm=llm, tools=[]).run(TASK, memory=chat)  # pyright: ignore[reportDeprecated]
    assert "priority set to High" in str(answer)
    assert "<lessons>" not in llm.last_input()
    assert any(
        r.levelno >= logging.WARNING and "lesson" in r.getMessage().lower() for r in caplog.records
    )
