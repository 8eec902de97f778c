"""A page or state with half a character still gets its lessons, in LlamaIndex.

A browser or app page whose text a script cut by UTF-16 units holds half an emoji (a lone
surrogate). The lesson memory refuses such text, and `LessonsMemoryBlock` read that refusal as
a failing memory: logged as an outage, and the agent got no lessons at that step. The block
now reads the page and the state as the episodes block reads a query: the half character as
U+FFFD, the rest as it is.
"""

from __future__ import annotations

import logging

import pytest
from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import LessonsMemoryBlock

AGENT = "web"
PAGE = {"url": "https://helpdesk.example/tickets/7", "elements": ["[12] button 'Priority'"]}


@pytest.mark.parametrize(
    ("page", "state"),
    [
        ({**PAGE, "page": "Ticket 7 \ud83d"}, None),
        (PAGE, "Open the priority menu \ud83d"),
    ],
    ids=["page title", "the state"],
)
async def test_half_a_character_in_the_page_or_state_still_gives_the_lessons(
    memory: EpisodicMemory,
    user: str,
    caplog: pytest.LogCaptureFixture,
    page: dict[str, object],
    state: str | None,
) -> None:
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    await lessons.init_episode("ticket-7", user_id=user, agent_id=AGENT, task="Set priority")
    await lessons.record_step_start(
        env_pre=PAGE,
        internal_state="Open the priority menu",
        action="click('12')",
        action_element_text="Priority",
    )
    await lessons.end_episode(final_env=PAGE)
    await lessons.init_episode("ticket-7", user_id=user, agent_id=AGENT, task="Set priority")
    block = LessonsMemoryBlock(lessons=lessons)
    asked = [ChatMessage(role="user", content="Open the priority menu")]

    with caplog.at_level(logging.WARNING, logger="llama_index.memory.episodex"):
        text = await block.aget(asked, current_env=page, current_state=state)

    assert "Lessons From Previous Attempt" in text and "click('12')" in text
    assert "lesson retrieval failed" not in caplog.text
    # The caller's page is read, not changed.
    assert page.get("page") in (None, "Ticket 7 \ud83d")
