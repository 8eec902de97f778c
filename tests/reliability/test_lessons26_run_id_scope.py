"""An attempt in progress is known by its user, agent, session and run, not by its run id alone.

`StepLessonMemory` kept the attempts in progress by `run_id`. Callers choose run ids
(`init_episode(..., run_id=...)`), and short ones repeat across sessions and users (`"1"`):
a second attempt started with the same run id, by another user on a shared instance or by
the same user on another task, replaced the first one. The first attempt's unsaved steps were
lost, and its next steps were recorded into the other user's session, whose lessons it then
read.
"""

from __future__ import annotations

import asyncio
import contextvars

from episodex import StepLessonMemory

PAGE = {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]}


def test_the_same_run_id_in_two_users_sessions_keeps_both(lessons: StepLessonMemory) -> None:
    async def alice_starts() -> contextvars.Context:
        await lessons.init_episode("ticket-7", user_id="alice", agent_id="web", run_id="1")
        await lessons.record_step_start(env_pre=PAGE, internal_state="alice", action="click('1')")
        return contextvars.copy_context()

    async def bob_starts() -> None:
        await lessons.init_episode("ticket-9", user_id="bob", agent_id="web", run_id="1")
        await lessons.record_step_start(env_pre=PAGE, internal_state="bob", action="click('9')")
        await lessons.persist_memories()

    async def main() -> None:
        # Each part in its own task, as two requests served by one shared instance.
        alice = await asyncio.create_task(alice_starts())
        await asyncio.create_task(bob_starts())

        async def alice_goes_on() -> None:
            # The context of alice's task: its attempt is the one it started.
            await lessons.record_step_start(
                env_pre=PAGE, internal_state="alice", action="click('2')"
            )
            await lessons.persist_memories()

        await asyncio.create_task(alice_goes_on(), context=alice)

    asyncio.run(main())
    alice_steps = asyncio.run(
        lessons.load_all_memories_for_session("ticket-7", user_id="alice", agent_id="web")
    )
    bob_steps = asyncio.run(
        lessons.load_all_memories_for_session("ticket-9", user_id="bob", agent_id="web")
    )
    assert [(m.internal_state, m.action) for m in alice_steps] == [
        ("alice", "click('1')"),
        ("alice", "click('2')"),
    ]
    assert [(m.internal_state, m.action) for m in bob_steps] == [("bob", "click('9')")]


def test_an_attempt_passed_explicitly_is_the_one_of_its_session(
    lessons: StepLessonMemory,
) -> None:
    async def main() -> tuple[list[str], list[str]]:
        first = await asyncio.create_task(
            lessons.init_episode("task-a", user_id="u1", agent_id="web", run_id="1")
        )
        second = await asyncio.create_task(
            lessons.init_episode("task-b", user_id="u1", agent_id="web", run_id="1")
        )
        await lessons.record_step_start(
            env_pre=PAGE, internal_state="a", action="click('a')", attempt=first
        )
        await lessons.record_step_start(
            env_pre=PAGE, internal_state="b", action="click('b')", attempt=second
        )
        await lessons.persist_memories(attempt=first)
        await lessons.persist_memories(attempt=second)
        a = await lessons.load_all_memories_for_session("task-a", user_id="u1", agent_id="web")
        b = await lessons.load_all_memories_for_session("task-b", user_id="u1", agent_id="web")
        return [m.action for m in a], [m.action for m in b]

    assert asyncio.run(main()) == (["click('a')"], ["click('b')"])
