"""An attempt ended by the task that started it is ended in the tasks created from that one.

A task that starts an attempt (`init_episode`) and then creates tasks (a background worker, a
pool of workers begun lazily during a request) gives them its context: they share its
attempt in progress. When the starting task ended the attempt (`end_episode`), those tasks
still had it in progress: they got its lessons for any state and recorded steps into it,
after it was stored and graded (the steps of a reused worker's next user, in this user's
session). An attempt ended by the task that started it is now ended in every task that
shares that start; one ended by another task (a task created to end it) is ended there
only, as before (tests/reliability/test_audit32_lessons_ended_attempt.py).
"""

from __future__ import annotations

import asyncio

import pytest
from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory, ValidationError
from episodex.testing import HashEmbedder

ALICE_PAGE = {"url": "https://desk.example/alice/billing", "elements": ["[12] button 'Refund'"]}
BOB_PAGE = {"url": "https://desk.example/bob/billing", "elements": ["[12] button 'Refund'"]}
GRADER = ProgrammaticGrader(expected_actions=["click('12')"])
ALICE = {"user_id": "alice", "agent_id": "web"}


async def test_an_attempt_its_starter_ended_is_ended_in_the_tasks_it_created() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory, grader=GRADER)
    read, ended = asyncio.Event(), asyncio.Event()
    try:
        # Alice's first attempt, so her second one has an AVOID lesson to show.
        await lessons.init_episode("billing", **ALICE, task="refund")
        await lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('13')"
        )
        await lessons.end_episode(final_env=ALICE_PAGE)
        await lessons.init_episode("billing", **ALICE, task="refund")

        async def worker() -> None:
            # Created while Alice's second attempt was in progress; it ends meanwhile.
            assert "AVOID" in await lessons.lessons_block(ALICE_PAGE, "alice's refund")
            read.set()
            await ended.wait()
            with pytest.raises(ValidationError, match="has ended"):
                await lessons.lessons_block(BOB_PAGE, "bob's refund")
            with pytest.raises(ValidationError, match="has ended"):
                await lessons.record_step_start(
                    env_pre=BOB_PAGE, internal_state="bob's refund", action="click('12')"
                )
            with pytest.raises(ValidationError, match="has ended"):
                await lessons.record_step_end(BOB_PAGE)
            # Read back, as in the task that ended it.
            assert lessons.episode is not None and lessons.episode.rep == 2

        running = asyncio.create_task(worker())
        await read.wait()  # the worker reads its lessons while the attempt is in progress
        await lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('12')"
        )
        await lessons.end_episode(final_env=ALICE_PAGE)
        stored = await lessons.load_all_memories_for_session("billing", **ALICE)
        ended.set()
        await running
        assert await lessons.load_all_memories_for_session("billing", **ALICE) == stored
        assert [m.action for m in lessons.steps] == ["click('12')"]
    finally:
        memory.close()


async def test_a_task_created_to_end_it_ends_it_there_only() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory, grader=GRADER)
    try:
        await lessons.init_episode("billing", **ALICE, task="refund")

        async def helper() -> None:
            await lessons.end_episode(final_env=ALICE_PAGE)
            with pytest.raises(ValidationError, match="has ended"):
                await lessons.record_step_start(
                    env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('12')"
                )

        await asyncio.create_task(helper())
        # The starter's attempt is still in progress; ended by it, it is ended for all.
        step = await lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('12')"
        )
        assert step.step_num == 1
        await lessons.end_episode(final_env=ALICE_PAGE)
        with pytest.raises(ValidationError, match="has ended"):
            await lessons.lessons_block(BOB_PAGE, "bob's refund")
    finally:
        memory.close()
