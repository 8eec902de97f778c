"""Lessons mode gives a later request on the same task or thread no lessons of an ended attempt.

The attempt a `StepLessonMemory` call means is the one its asyncio task (or, through
`SyncStepLessonMemory`, its thread) started. After `end_episode` it stayed that task's attempt
until the next `init_episode`, so the next agent run there, another user's on a reused server
thread, got its REPEAT/AVOID block in the system message. The run now gets no block, and the
model still answers.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory, SyncStepLessonMemory
from episodex.testing import HashEmbedder
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel

ALICE_PAGE = {"url": "https://desk.example/alice/billing", "elements": ["[12] button 'Refund'"]}
BOB_PAGE = {"url": "https://desk.example/bob/billing", "elements": ["[12] button 'Refund'"]}
GRADER = ProgrammaticGrader(expected_actions=["click('12')"])
SYSTEM = "You are a billing agent."


def _system(messages: list[BaseMessage]) -> str:
    assert isinstance(messages[0], SystemMessage)
    return str(messages[0].content)


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


async def test_the_next_run_in_the_task_gets_no_lessons_of_the_ended_attempt() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory, grader=GRADER)
    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=lambda state, runtime: BOB_PAGE
    )
    try:
        for _ in range(2):
            await lessons.init_episode("billing", user_id="alice", agent_id="web", task="refund")
            await lessons.record_step_start(
                env_pre=ALICE_PAGE, internal_state="refund", action="click('13')"
            )
            await lessons.end_episode(final_env=ALICE_PAGE)
        model = RecordingChatModel(responses=[AIMessage("Refunded.")], received=[])
        agent = create_agent(model, system_prompt=SYSTEM, middleware=[steps])
        answer = await agent.ainvoke(_ask("refund"))  # pyright: ignore[reportArgumentType]
        assert _system(model.received[0]) == SYSTEM
        assert answer["messages"][-1].content == "Refunded."
    finally:
        memory.close()


def test_a_reused_thread_gets_no_lessons_of_the_ended_attempt() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=GRADER))
    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=lambda state, runtime: BOB_PAGE
    )
    model = RecordingChatModel(responses=[AIMessage("Refunded.")], received=[])
    agent = create_agent(model, system_prompt=SYSTEM, middleware=[steps])
    pool = ThreadPoolExecutor(max_workers=1)  # one server thread, request after request

    def alice_request() -> None:
        for _ in range(2):
            lessons.init_episode("billing", user_id="alice", agent_id="web", task="refund")
            lessons.record_step_start(
                env_pre=ALICE_PAGE, internal_state="refund", action="click('13')"
            )
            lessons.end_episode(final_env=ALICE_PAGE)

    def bob_request() -> Any:
        return agent.invoke(_ask("refund"))  # pyright: ignore[reportArgumentType]

    try:
        pool.submit(alice_request).result()
        answer = pool.submit(bob_request).result()
        assert _system(model.received[0]) == SYSTEM
        assert answer["messages"][-1].content == "Refunded."
    finally:
        pool.shutdown()
        lessons.close()
        memory.close()
