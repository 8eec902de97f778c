"""An ended attempt is read back by its caller, but gives no lessons and takes no steps.

Which attempt a call means is per asyncio task, or per thread through the sync twin, and a
web server reuses its threads (a worker its task) for request after request of any user.
After `end_episode` the ended attempt stayed the thread's attempt in progress until the
next `init_episode` there: a later request that read lessons without starting an attempt
(an application that uses lessons for some users only) got the previous user's lessons in
its prompt, through `lessons_block` and the LlamaIndex block, and a step it recorded went
into that user's session. The caller that ended the attempt can still read it back (its
`episode`, `steps`, a `persist_memories` again); lessons for a new state and new steps need
the next `init_episode` (or the attempt passed as `attempt=`).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from episodex import (
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    SyncStepLessonMemory,
    ValidationError,
)
from episodex.testing import HashEmbedder
from llama_index.memory.episodex import LessonsMemoryBlock

ALICE_PAGE = {"url": "https://desk.example/alice/billing", "elements": ["[12] button 'Refund'"]}
BOB_PAGE = {"url": "https://desk.example/bob/billing", "elements": ["[12] button 'Refund'"]}
GRADER = ProgrammaticGrader(expected_actions=["click('12')"])
ALICE = {"user_id": "alice", "agent_id": "web"}


async def _alice_two_attempts(lessons: StepLessonMemory) -> None:
    """Alice's first attempt fails (an AVOID lesson); her second sees it, then ends."""
    for _ in range(2):
        await lessons.init_episode("billing", **ALICE, task="refund")
        await lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('13')"
        )
        await lessons.end_episode(final_env=ALICE_PAGE)


async def test_an_ended_attempt_gives_no_lessons_and_takes_no_steps() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory, grader=GRADER)
    try:
        await _alice_two_attempts(lessons)
        stored = await lessons.load_all_memories_for_session("billing", **ALICE)
        ended = lessons.episode
        # The caller that ended it reads it back, and may store it again.
        assert ended is not None and ended.rep == 2
        assert [m.outcome for m in lessons.steps] == ["failure"]
        assert len(await lessons.persist_memories()) == 1
        assert await lessons.load_all_memories_for_session() == stored
        # A new state gets no lessons from it, and nothing new goes into it.
        with pytest.raises(ValidationError, match="has ended"):
            await lessons.lessons_block(BOB_PAGE, "bob's refund")
        with pytest.raises(ValidationError, match="has ended"):
            await lessons.retrieve_memories(BOB_PAGE, "bob's refund")
        with pytest.raises(ValidationError, match="has ended"):
            await lessons.record_step_start(
                env_pre=BOB_PAGE, internal_state="bob's refund", action="click('12')"
            )
        with pytest.raises(ValidationError, match="has ended"):
            await lessons.record_step_end(BOB_PAGE)
        assert await lessons.load_all_memories_for_session("billing", **ALICE) == stored
        assert [m.env_post for m in lessons.steps] == [stored[-1].env_post]
        # Passed as `attempt=`, the ended attempt is still Alice's to read lessons for.
        assert "AVOID" in await lessons.lessons_block(ALICE_PAGE, "alice's refund", attempt=ended)
        # The next start is in progress as before.
        await lessons.init_episode("billing", **ALICE, task="refund")
        assert "AVOID" in await lessons.lessons_block(ALICE_PAGE, "alice's refund")
    finally:
        memory.close()


async def test_an_attempt_ended_in_another_task_stays_in_progress_here() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory, grader=GRADER)
    try:
        await lessons.init_episode("billing", **ALICE, task="refund")
        await lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('13')"
        )
        await asyncio.create_task(lessons.end_episode(final_env=ALICE_PAGE))
        step = await lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('12')"
        )
        assert step.step_num == 2
    finally:
        memory.close()


def test_a_reused_thread_never_shows_the_ended_attempts_lessons() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=GRADER))
    block = LessonsMemoryBlock(lessons=lessons)
    pool = ThreadPoolExecutor(max_workers=1)  # one server thread, request after request

    def alice_request() -> None:
        for rep in (1, 2):
            lessons.init_episode("billing", **ALICE, task="refund")
            assert ("AVOID" in lessons.lessons_block(ALICE_PAGE, "alice's refund")) == (rep == 2)
            lessons.record_step_start(
                env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('13')"
            )
            lessons.end_episode(final_env=ALICE_PAGE)

    def bob_reads_lessons() -> str:
        # Bob's request starts no attempt; the block is read in its thread, as `Memory` does.
        return asyncio.run(block.aget(current_env=BOB_PAGE, current_state="bob's refund"))

    def bob_records_a_step() -> None:
        lessons.record_step_start(
            env_pre=BOB_PAGE, internal_state="bob's refund", action="click('12')"
        )
        lessons.persist_memories()

    try:
        pool.submit(alice_request).result()
        stored = lessons.load_all_memories_for_session("billing", **ALICE)
        assert pool.submit(bob_reads_lessons).result() == ""
        with pytest.raises(ValidationError, match="has ended"):
            pool.submit(bob_records_a_step).result()
        assert lessons.load_all_memories_for_session("billing", **ALICE) == stored
    finally:
        pool.shutdown()
        lessons.close()
        memory.close()
