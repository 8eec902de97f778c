"""LessonsMemoryBlock: REPEAT/AVOID lessons of an earlier attempt reach the agent's LLM."""

from __future__ import annotations

from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, ProgrammaticGrader, StepLessonMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import InsertMethod, Memory
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    LessonsMemoryBlock,
    LessonSource,
    offline_tokenizer,
)
from sqlalchemy.ext.asyncio import AsyncEngine

# LlamaIndex's workflow engine walks every attribute of an agent when it builds one, pydantic's
# deprecated ones (`__fields__`, `model_computed_fields` on an instance) included.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "web"
TASK = "Set the priority of ticket 7 to High"
PAGE = {
    "url": "https://helpdesk.example/tickets/7",
    "elements": ["[12] button 'Priority'", "[30] select 'Priority level'", "[44] button 'Delete'"],
}


async def first_attempt(lessons: StepLessonMemory, user: str, session: str) -> None:
    """Rep 1: a wrong click on Delete, then the right click on Priority; the select is missed."""
    await lessons.init_episode(session, user_id=user, agent_id=AGENT, task=TASK)
    await lessons.record_step_start(
        env_pre=PAGE,
        internal_state="I must change the ticket",
        action="click('44')",
        action_element_text="Delete",
    )
    await lessons.record_step_start(
        env_pre=PAGE,
        internal_state="Open the priority menu",
        action="click('12')",
        action_element_text="Priority",
    )
    await lessons.end_episode(final_env=PAGE)


def step_lessons(memory: EpisodicMemory) -> StepLessonMemory:
    grader = ProgrammaticGrader(expected_actions=["click('12')", "select_option('30', 'High')"])
    return StepLessonMemory.from_memory(memory, grader=grader)


@pytest.mark.parametrize("insert_method", [InsertMethod.SYSTEM, InsertMethod.USER])
async def test_the_second_attempt_receives_repeat_and_avoid_lessons(
    memory: EpisodicMemory,
    user: str,
    make_llm: Any,
    chat_engine: AsyncEngine,
    insert_method: InsertMethod,
) -> None:
    lessons = step_lessons(memory)
    block = LessonsMemoryBlock(lessons=lessons, current_env=PAGE)
    session = f"ticket-7-{insert_method.value}"
    await lessons.init_episode(session, user_id=user, agent_id=AGENT, task=TASK)
    assert await block.aget([ChatMessage(role="user", content=TASK)]) == ""  # rep 1: the baseline
    await first_attempt(lessons, user, session)

    await lessons.init_episode(session, user_id=user, agent_id=AGENT, task=TASK)
    episodes = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id=session,
        memory_blocks=[episodes, block],
        insert_method=insert_method,
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    llm = make_llm()
    await FunctionAgent(llm=llm, tools=[]).run(TASK, memory=chat)  # pyright: ignore[reportDeprecated]

    sent = llm.last_input()
    assert "<memory>" in sent and "<lessons>" in sent
    assert "# Lessons From Previous Attempt" in sent
    assert "AVOID: [/tickets/7" in sent and "Delete" in sent
    assert "REPEAT: [/tickets/7" in sent and "Priority" in sent
    assert "<episodes>" not in sent  # no conversation recorded yet: no empty episodes block
    carrier = llm.calls[-1][0 if insert_method is InsertMethod.SYSTEM else -1]
    assert "# Lessons From Previous Attempt" in (carrier.content or "")


async def test_the_page_can_come_with_each_read(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    lessons = step_lessons(memory)
    await first_attempt(lessons, user, "ticket-7-kwargs")
    await lessons.init_episode("ticket-7-kwargs", user_id=user, agent_id=AGENT, task=TASK)
    block = LessonsMemoryBlock(lessons=lessons)
    chat = Memory.from_defaults(
        session_id="s",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    await chat.aput(ChatMessage(role="user", content=TASK))

    assert len(await chat.aget()) == 1  # no page known: no lessons block
    [system, _] = await chat.aget(current_env=PAGE, current_state="Open the priority menu")
    assert "# Lessons From Previous Attempt" in (system.content or "")
    # A page that looks nothing like the one of the lessons gets none.
    other = {"url": "https://helpdesk.example/settings", "elements": ["[1] link 'Profile'"]}
    assert len(await chat.aget(current_env=other)) == 1


async def test_flushed_messages_are_not_lessons(memory: EpisodicMemory, user: str) -> None:
    lessons = step_lessons(memory)
    await lessons.init_episode("ticket-flush", user_id=user, agent_id=AGENT, task=TASK)
    block = LessonsMemoryBlock(lessons=lessons, current_env=PAGE)
    await block.aput(
        [ChatMessage(role="user", content="click('44')")],
        from_short_term_memory=True,
        session_id="s",
    )
    await block.aput([ChatMessage(role="user", content="click('44')")], session_id="s")
    assert await lessons.count("ticket-flush", user_id=user, agent_id=AGENT) == 0


async def test_any_lesson_source_works() -> None:
    class Fixed:
        def __init__(self) -> None:
            self.calls: list[tuple[Any, str]] = []

        async def lessons_block(self, current_env: Any, current_state: str) -> str:
            self.calls.append((current_env, current_state))
            return "# Lessons From Previous Attempt\n1. REPEAT: [/ 100%] click: 'OK'"

    source = Fixed()
    assert isinstance(source, LessonSource)
    block = LessonsMemoryBlock(lessons=source, current_env={"url": "/"})
    text = await block.aget(
        [ChatMessage(role="user", content="press OK"), ChatMessage(role="assistant", content="...")]
    )
    assert text.startswith("# Lessons From Previous Attempt")
    assert source.calls == [({"url": "/"}, "press OK")]


def test_a_source_without_lessons_block_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="lessons"):
        LessonsMemoryBlock(lessons=object())
