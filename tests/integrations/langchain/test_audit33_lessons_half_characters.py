"""A page or state with half a character still gets its lessons, in the LangChain middleware.

A page read from a browser or an app whose text a script cut by UTF-16 units holds half an
emoji (a lone surrogate). The lesson memory refuses such text; the lessons-mode middleware
passed the page and the state on as they were, logged the refusal as a failed recall, and the
model got no REPEAT/AVOID lessons at that call. The middleware now reads both as the
retrievers read a query: the half character as U+FFFD, the rest as it is (the LlamaIndex
lessons block does the same).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel

PAGE = {"url": "https://desk.example/tickets/9", "elements": ["[12] button 'Priority'"]}
TASK = "raise the priority"


@pytest.mark.parametrize(
    ("page", "state"),
    [({**PAGE, "page": "Ticket 9 \ud83d"}, TASK), (PAGE, f"{TASK} \ud83d")],
    ids=["page title", "the state"],
)
async def test_half_a_character_in_the_page_or_state_still_gives_the_lessons(
    memory: EpisodicMemory, page: dict[str, Any], state: str
) -> None:
    user = f"u-{uuid.uuid4().hex}"
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    await lessons.init_episode("ticket-9", user_id=user, agent_id="web", task=TASK)
    await lessons.record_step_start(env_pre=PAGE, internal_state=TASK, action="click('13')")
    await lessons.end_episode(final_env=PAGE)
    await lessons.init_episode("ticket-9", user_id=user, agent_id="web", task=TASK)
    assert "AVOID" in await lessons.lessons_block(PAGE, TASK)

    def env(agent_state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
        return page

    def current_state(agent_state: Mapping[str, Any], runtime: Any) -> str:
        return state

    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=env, current_state=current_state
    )
    model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
    await create_agent(model, middleware=[steps]).ainvoke({"messages": [HumanMessage(TASK)]})  # pyright: ignore[reportArgumentType]

    first = model.received[0][0]
    assert isinstance(first, SystemMessage)
    assert "AVOID" in str(first.content) and "Do this instead: click('12')" in str(first.content)
    assert steps.recall_failures == 0
    # The caller's page is read, not changed.
    assert page.get("page") in (None, "Ticket 9 \ud83d")
