"""A sync twin called back from inside one of its own calls is refused, not hung forever.

A sync twin (`SyncStepLessonMemory`, `SyncEpisodicMemory`) runs each call on its private event
loop and blocks the caller until it ends. An async grader or callback the call awaits runs on
that loop's thread; if it called the sync twin back, that call waited for the loop it was
blocking, and the program hung with no error. It is refused now with `NotSupportedError`.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence

import pytest
from episodex import (
    EpisodicMemory,
    GradingResult,
    NotSupportedError,
    StepLessonMemory,
    StepMemory,
    SyncStepLessonMemory,
)
from episodex.testing import HashEmbedder

PAGE = {"url": "/tickets/7", "elements": ["[12] button 'Priority'"]}


class CallsTheTwinBack:
    """A grader whose grading looks up the session through the sync twin."""

    twin: SyncStepLessonMemory | None = None
    seen: BaseException | None = None

    async def grade(self, steps: Sequence[StepMemory], *, task: str | None = None) -> GradingResult:
        assert self.twin is not None
        try:
            self.twin.lessons_block(PAGE, "set the priority")
        except BaseException as exc:
            self.seen = exc
            raise
        raise AssertionError("unreachable: the twin answered from inside its own call")


@pytest.mark.timeout(60)
def test_a_twin_called_back_from_its_own_call_is_refused() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    grader = CallsTheTwinBack()
    twin = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=grader))
    grader.twin = twin

    def attempt() -> None:  # one thread: a twin keeps the attempt in progress per thread
        twin.init_episode("ticket-7", user_id="u", agent_id="web", task="set priority")
        twin.record_step_start(env_pre=PAGE, internal_state="try", action="click('12')")
        with pytest.raises(NotSupportedError, match="from inside one of its own calls"):
            twin.end_episode(final_env=PAGE)

    try:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:
            pool.submit(attempt).result(timeout=30)  # hung forever before
        except concurrent.futures.TimeoutError:
            pytest.fail("end_episode hung: the grader's call back into the twin never ended")
        finally:
            pool.shutdown(wait=False)  # a hung thread is not waited for
        assert isinstance(grader.seen, NotSupportedError)
        # The twin still answers calls from outside.
        assert twin.count("ticket-7", user_id="u", agent_id="web") == 1
    finally:
        twin.close()
        memory.close()
