"""A task that started no attempt never reads or writes another user's attempt.

A call outside the task (or thread) that started an attempt used to fall back to "the" open
attempt whenever this `StepLessonMemory` had exactly one. In a server that is simply the first
user's: after a restart, Alice's request starts her second attempt, and a request of Bob's
that skipped `init_episode` got Alice's REPEAT/AVOID lessons (her pages, her reasoning) and
would have recorded its steps into her attempt. Such a call is now refused with a
`ValidationError`; passing the `Attempt` (`attempt=`) still works from anywhere.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from episodex import (
    Attempt,
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    ValidationError,
)
from episodex.testing import HashEmbedder

PAGE = {
    "url": "https://bank.example/transfer",
    "elements": ["[12] button 'Send'", "[13] link 'Cancel'"],
}


def _lessons(memory: EpisodicMemory) -> StepLessonMemory:
    return StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )


async def _alice_first_attempt(lessons: StepLessonMemory) -> None:
    await lessons.init_episode("transfer", user_id="alice", agent_id="web")
    await lessons.record_step_start(
        env_pre=PAGE, internal_state="alice's account 1234", action="click('13')"
    )
    await lessons.end_episode(final_env=PAGE)


async def test_a_task_without_an_attempt_never_gets_the_only_open_one(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        await asyncio.create_task(_alice_first_attempt(_lessons(memory)))
        # A new instance (a restarted server): Alice's request starts her second attempt.
        lessons = _lessons(memory)
        alice = await asyncio.create_task(
            lessons.init_episode("transfer", user_id="alice", agent_id="web")
        )

        async def bob_skipping_init() -> None:
            with pytest.raises(ValidationError, match="no episode in progress"):
                await lessons.lessons_block(PAGE, "send money")
            with pytest.raises(ValidationError, match="no episode in progress"):
                await lessons.record_step_start(
                    env_pre=PAGE, internal_state="bob's plan", action="click('12')"
                )
            assert lessons.episode is None and lessons.steps == []

        await asyncio.create_task(bob_skipping_init())
        # Alice's attempt is untouched, and still reachable from anywhere by its Attempt.
        assert isinstance(alice, Attempt)
        assert "AVOID" in await lessons.lessons_block(PAGE, "send money", attempt=alice)
        await lessons.end_episode(final_env=PAGE, attempt=alice)
        stored = await lessons.load_all_memories_for_session(
            "transfer", user_id="alice", agent_id="web"
        )
        assert [m.internal_state for m in stored] == ["alice's account 1234"]
    finally:
        memory.close()
