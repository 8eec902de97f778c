"""Resuming an attempt that is still in progress keeps the steps it has not stored yet.

`init_episode(..., run_id=...)` resumes an attempt: the way a second task (another request
on a shared instance) takes up a run, and what the error for an unknown attempt tells callers
to do. For a run already in progress on this instance it loaded the stored steps and replaced
the attempt with them: every step recorded since the last `persist_memories` was dropped, and
never stored or graded. An attempt that had stored nothing was even restarted from scratch.
"""

from __future__ import annotations

import asyncio

from episodex import Attempt, StepLessonMemory

PAGE = {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]}


def test_resuming_a_run_in_progress_keeps_its_unstored_steps(lessons: StepLessonMemory) -> None:
    async def resume() -> Attempt:
        # Another task takes up the same run, as a second request would.
        return await lessons.init_episode("ticket-7", user_id="u", agent_id="web", run_id="r1")

    async def main() -> None:
        first = await lessons.init_episode(
            "ticket-7", user_id="u", agent_id="web", run_id="r1", task="Save ticket 7"
        )
        await lessons.record_step_start(env_pre=PAGE, internal_state="a", action="click('1')")
        await lessons.persist_memories()
        await lessons.record_step_start(env_pre=PAGE, internal_state="b", action="click('2')")

        again = await asyncio.create_task(resume())
        assert (again.rep, again.task) == (first.rep, "Save ticket 7")
        await lessons.record_step_start(
            env_pre=PAGE, internal_state="c", action="click('3')", attempt=again
        )
        await lessons.persist_memories(attempt=again)
        stored = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="u", agent_id="web"
        )
        assert [(m.step_id, m.action) for m in stored] == [
            ("rep1-step1", "click('1')"),
            ("rep1-step2", "click('2')"),
            ("rep1-step3", "click('3')"),
        ]

    asyncio.run(main())


def test_resuming_a_run_that_stored_nothing_keeps_its_steps(lessons: StepLessonMemory) -> None:
    async def main() -> None:
        await lessons.init_episode("ticket-8", user_id="u", agent_id="web")
        await lessons.persist_memories()  # rep 1, stored with no steps: rep 2 comes next
        first = await lessons.init_episode("ticket-8", user_id="u", agent_id="web", run_id="r2")
        await lessons.record_step_start(env_pre=PAGE, internal_state="a", action="click('1')")

        again = await lessons.init_episode("ticket-8", user_id="u", agent_id="web", run_id="r2")
        assert again.rep == first.rep
        assert [m.action for m in lessons.steps] == ["click('1')"]

    asyncio.run(main())
