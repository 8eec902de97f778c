"""Lessons mode takes async `env=` and `current_state=` functions, as it takes async sources.

The middleware called `env(state, runtime)` and `current_state(state, runtime)` and used what
they returned. An async function (the page read from an async browser session) returned a
coroutine: the lesson memory was asked for the lessons of a coroutine, which failed on every
model call, was logged as a failed recall, and the agent never saw a lesson. What such a
function returns is now awaited; plain functions work as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory, SyncStepLessonMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel


def _system(model: RecordingChatModel) -> str:
    first = model.received[0][0]
    assert isinstance(first, SystemMessage)
    return str(first.content)


def test_async_getters_reach_a_sync_lesson_memory(
    second_attempt: tuple[SyncStepLessonMemory, dict[str, Any], str],
) -> None:
    lessons, page, task = second_attempt
    expected = lessons.lessons_block(page, task)
    assert "AVOID" in expected
    states: list[str] = []

    async def env(state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
        return page

    async def current_state(state: Mapping[str, Any], runtime: Any) -> str:
        states.append(str(state["messages"][-1].text))
        return task

    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=env, current_state=current_state
    )
    model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
    create_agent(model, middleware=[steps]).invoke({"messages": [HumanMessage(task)]})  # pyright: ignore[reportArgumentType]
    assert _system(model) == expected
    assert states == [task]
    assert steps.recall_failures == 0


async def test_an_async_env_reaches_an_async_lesson_memory(memory: EpisodicMemory) -> None:
    user = f"u-{uuid.uuid4().hex}"
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    page = {"url": "https://desk.example/tickets/8", "elements": ["[12] button 'Priority'"]}
    await lessons.init_episode("ticket-8", user_id=user, agent_id="web", task="raise it")
    await lessons.record_step_start(env_pre=page, internal_state="close it", action="click('13')")
    await lessons.end_episode(final_env=page)
    await lessons.init_episode("ticket-8", user_id=user, agent_id="web", task="raise it")
    expected = await lessons.lessons_block(page, "raise it")
    assert "AVOID" in expected

    async def env(state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
        return page

    steps = EpisodicMemoryMiddleware(mode="lessons", lessons=lessons, env=env)
    model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
    await create_agent(model, middleware=[steps]).ainvoke({"messages": [HumanMessage("raise it")]})  # pyright: ignore[reportArgumentType]
    assert _system(model) == expected
    assert steps.recall_failures == 0
