"""Grades written by `add_grades` stay on the attempt's own copy, and nothing recorded is lost.

An attempt in progress keeps its steps in memory, and `persist_memories` stores that copy over
the stored one. `add_grades` wrote the grades to the store but left that copy behind:
- grading another attempt still in progress (`run_id=`) graded only its stored steps; its
  next `persist_memories` stored its pending copy over them and the lessons were gone;
- a caller cancelled while the grades were written (a timeout around `end_episode`) left the
  copy pending while the store had the grades: the next store put them back to pending;
- the copy was replaced by the graded steps, so a step recorded while the grades were being
  written was dropped, never stored nor graded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest
from episodex import GradingResult, StepGrade, StepLessonMemory, StepMemory

PAGE = {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]}
IDS = {"user_id": "u", "agent_id": "web"}


def _all_right(steps: Sequence[StepMemory]) -> GradingResult:
    return GradingResult(
        grades=[StepGrade(step_id=s.step_id, correct=True) for s in steps], task_success=True
    )


async def _stored(lessons: StepLessonMemory, session: str) -> list[tuple[str, str, str]]:
    steps = await lessons.load_all_memories_for_session(session, **IDS)
    return [(m.run_id, m.step_id, m.outcome) for m in steps]


def test_grading_another_attempt_in_progress_survives_its_next_store(
    lessons: StepLessonMemory,
) -> None:
    async def main() -> None:
        await lessons.init_episode("t", **IDS, run_id="r1")
        await lessons.record_step_start(env_pre=PAGE, internal_state="a", action="click('1')")
        await lessons.persist_memories()
        await lessons.record_step_start(env_pre=PAGE, internal_state="b", action="click('2')")

        # The next attempt, in another task, grades the first one.
        async def grade_r1() -> None:
            second = await lessons.init_episode("t", **IDS, run_id="r2")
            await lessons.add_grades(
                {
                    "grades": [
                        {"step_id": "rep1-step1", "correct": False, "correction": "click 9"},
                        {"step_id": "rep1-step2", "correct": True},
                    ],
                    "task_success": False,
                },
                run_id="r1",
                attempt=second,
            )

        await asyncio.create_task(grade_r1())
        assert [m.outcome for m in lessons.steps] == ["failure", "success"]
        await lessons.persist_memories()  # r1 stores its copy again
        assert await _stored(lessons, "t") == [
            ("r1", "rep1-step1", "failure"),
            ("r1", "rep1-step2", "success"),
        ]

    asyncio.run(main())


def test_grades_written_for_a_cancelled_caller_are_not_undone(
    lessons: StepLessonMemory, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        written = asyncio.Event()

        class Written(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if "cancelled by its caller" in record.getMessage():
                    written.set()

        class GiveUp:
            """Grades, then its caller gives up (a timeout) while the grades are written."""

            async def grade(
                self, steps: Sequence[StepMemory], *, task: str | None = None
            ) -> GradingResult:
                task_ = asyncio.current_task()
                assert task_ is not None
                task_.cancel()
                return _all_right(steps)

        handler = Written()
        logging.getLogger("episodex").addHandler(handler)
        try:
            await lessons.init_episode("t", **IDS, run_id="r1")
            await lessons.record_step_start(env_pre=PAGE, internal_state="a", action="click('1')")
            with pytest.raises(asyncio.CancelledError):
                await asyncio.create_task(lessons.end_episode(grader=GiveUp()))
            await asyncio.wait_for(written.wait(), 30)
        finally:
            logging.getLogger("episodex").removeHandler(handler)
        assert await _stored(lessons, "t") == [("r1", "rep1-step1", "success")]
        assert [m.outcome for m in lessons.steps] == ["success"]
        await lessons.persist_memories()
        assert await _stored(lessons, "t") == [("r1", "rep1-step1", "success")]

    with caplog.at_level(logging.INFO, logger="episodex"):
        asyncio.run(main())


def test_a_step_recorded_while_grades_are_written_is_kept(lessons: StepLessonMemory) -> None:
    async def main() -> None:
        attempt = await lessons.init_episode("t", **IDS, run_id="r1")
        await lessons.record_step_start(env_pre=PAGE, internal_state="a", action="click('1')")
        recorded: list[asyncio.Task[StepMemory]] = []

        class GradesThenAgentGoesOn:
            async def grade(
                self, steps: Sequence[StepMemory], *, task: str | None = None
            ) -> GradingResult:
                # Another task of the agent records its next step; it runs while the
                # grades are being written.
                recorded.append(
                    asyncio.create_task(
                        lessons.record_step_start(
                            env_pre=PAGE, internal_state="b", action="click('2')", attempt=attempt
                        )
                    )
                )
                return _all_right(steps)

        await lessons.end_episode(grader=GradesThenAgentGoesOn())
        await recorded[0]
        assert [(m.step_id, m.outcome) for m in lessons.steps] == [
            ("rep1-step1", "success"),
            ("rep1-step2", "pending"),
        ]
        await lessons.persist_memories()
        assert await _stored(lessons, "t") == [
            ("r1", "rep1-step1", "success"),
            ("r1", "rep1-step2", "pending"),
        ]

    asyncio.run(main())
