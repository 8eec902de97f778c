"""`load_all_memories_for_session` lists the steps by rep, then run by run, then by step.

Two attempts of one session get the same rep when the second starts before the first is
stored (two tabs on one task, a retry started early). Sorted by rep and step number alone,
their steps came back interleaved, step 1 of one run, step 1 of the other, step 2 of the
first...: read in order, the list no longer showed either attempt as it happened.
"""

from __future__ import annotations

import asyncio

from episodex import Attempt, StepLessonMemory

PAGE = {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]}


def test_two_runs_of_one_rep_are_not_interleaved(lessons: StepLessonMemory) -> None:
    async def start(run_id: str) -> Attempt:
        return await lessons.init_episode("ticket-7", user_id="u1", agent_id="web", run_id=run_id)

    async def main() -> list[tuple[int, str, int]]:
        # run ids that sort against the order the runs started in
        first = await asyncio.create_task(start("z-first"))
        second = await asyncio.create_task(start("a-second"))
        for n in range(3):
            for attempt in (first, second):
                await lessons.record_step_start(
                    env_pre=PAGE, internal_state="goal", action=f"click('{n}')", attempt=attempt
                )
        await lessons.persist_memories(attempt=first)
        await lessons.persist_memories(attempt=second)
        loaded = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="u1", agent_id="web"
        )
        return [(m.rep, m.run_id, m.step_num) for m in loaded]

    rows = asyncio.run(main())
    assert rows == [
        (1, "z-first", 1),
        (1, "z-first", 2),
        (1, "z-first", 3),
        (1, "a-second", 1),
        (1, "a-second", 2),
        (1, "a-second", 3),
    ]
