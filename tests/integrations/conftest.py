"""Shared by both adapters' tests: a memory that fails on demand, a lesson memory mid-task."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import (
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    SyncStepLessonMemory,
    open_engine,
)
from episodex.testing import FailingEngine, HashEmbedder


@pytest.fixture
def failing() -> Iterator[tuple[EpisodicMemory, FailingEngine]]:
    """A memory and its engine; set the engine's `reads` or `writes` to make them fail."""
    engine = FailingEngine(open_engine(location=":memory:"))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        yield memory, engine
    finally:
        memory.close()
        engine.close()  # the memory does not close an engine it was given


@pytest.fixture
def second_attempt(
    memory: EpisodicMemory,
) -> Iterator[tuple[SyncStepLessonMemory, dict[str, Any], str]]:
    """A sync lesson memory, a page and a task whose second attempt is under way.

    The first attempt clicked the wrong button and was graded: the page has an AVOID lesson.
    Both attempts start in the test's thread (a `SyncStepLessonMemory` attempt belongs to it).
    """
    page = {
        "url": "https://helpdesk.example/tickets/7",
        "elements": ["[12] button 'Priority'", "[44] button 'Delete'"],
    }
    task = "Set the priority of ticket 7 to High"
    user = f"user-{uuid.uuid4().hex}"
    grader = ProgrammaticGrader(expected_actions=["click('12')"])
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory, grader=grader))
    try:
        lessons.init_episode("ticket-7", user_id=user, agent_id="web", task=task)
        lessons.record_step_start(env_pre=page, internal_state="delete it", action="click('44')")
        lessons.end_episode(final_env=page)
        lessons.init_episode("ticket-7", user_id=user, agent_id="web", task=task)
        yield lessons, page, task
    finally:
        lessons.close()
