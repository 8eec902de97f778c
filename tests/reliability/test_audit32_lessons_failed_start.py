"""A failed `init_episode` leaves no attempt in progress, least of all another user's.

Which attempt a call means is per asyncio task, or per thread through the sync twin. A web
server reuses its threads (and a worker its task) for request after request, of any user. When
a request's `init_episode` failed (an id the store refuses, the engine unreachable) and the
application went on without memory, the thread's attempt was still the one its previous
request started: another user's. That user's lessons (their pages, their actions) went into
this user's prompt through `lessons_block` and the adapters' lesson blocks, and this user's
steps were stored in that user's session.
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


async def _alice_attempts(lessons: StepLessonMemory) -> None:
    """Alice's two attempts: the first graded (a lesson), the second still in progress."""
    await lessons.init_episode("billing", user_id="alice", agent_id="web", task="refund")
    await lessons.record_step_start(
        env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('13')"
    )
    await lessons.end_episode(final_env=ALICE_PAGE)
    await lessons.init_episode("billing", user_id="alice", agent_id="web", task="refund")
    assert "AVOID" in await lessons.lessons_block(ALICE_PAGE, "alice's refund")


async def test_a_failed_start_leaves_no_attempt_in_progress() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory, grader=GRADER)
    try:
        await _alice_attempts(lessons)
        # The same task now serves Bob, whose session id the store refuses.
        with pytest.raises(ValidationError):
            await lessons.init_episode("   ", user_id="bob", agent_id="web", task="refund")
        assert lessons.episode is None
        assert lessons.steps == []
        with pytest.raises(ValidationError, match="none was started in this task"):
            await lessons.lessons_block(BOB_PAGE, "bob's refund")
        with pytest.raises(ValidationError, match="none was started in this task"):
            await lessons.record_step_start(
                env_pre=BOB_PAGE, internal_state="bob's refund", action="click('12')"
            )
        # Alice's attempt itself is untouched: passed by its Attempt, it goes on.
        mine = await lessons.load_all_memories_for_session(
            "billing", user_id="alice", agent_id="web"
        )
        assert [m.env_pre.url for m in mine] == [ALICE_PAGE["url"]]
    finally:
        memory.close()


def test_a_reused_thread_never_shows_the_previous_users_lessons() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=GRADER))
    block = LessonsMemoryBlock(lessons=lessons)
    pool = ThreadPoolExecutor(max_workers=1)  # one server thread, request after request

    def alice_request() -> None:
        lessons.init_episode("billing", user_id="alice", agent_id="web", task="refund")
        lessons.record_step_start(
            env_pre=ALICE_PAGE, internal_state="alice's refund", action="click('13')"
        )
        lessons.end_episode(final_env=ALICE_PAGE)
        lessons.init_episode("billing", user_id="alice", agent_id="web", task="refund")

    def bob_request() -> str:
        try:  # the application goes on without memory when it cannot start the attempt
            lessons.init_episode("billing", user_id="bob", agent_id="web " * 200, task="refund")
        except ValidationError:
            pass
        # The block is read in the request's thread, as `Memory` reads it.
        return asyncio.run(block.aget(current_env=BOB_PAGE, current_state="bob's refund"))

    try:
        pool.submit(alice_request).result()
        shown = pool.submit(bob_request).result()
        assert shown == ""
        assert "alice" not in shown
    finally:
        pool.shutdown()
        lessons.close()
        memory.close()
