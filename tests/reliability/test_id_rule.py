"""Issue 14, item 14: one id rule for reads and writes (1 to 512 characters, not blank).

An id a read accepts can be written, and an id a write refuses is refused by reads too, so a
run can never recall under an id it then fails to record under.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from episodex import StepLessonMemory, SyncEpisodicMemory, SyncStepLessonMemory, ValidationError
from episodex.testing import HashEmbedder

LONG = "t" * 600
LIMIT = "t" * 512


def _episode(**ids: str) -> dict[str, Any]:
    base: dict[str, Any] = {"user_id": "u", "agent_id": "a", "conversation_id": "c"}
    return {"short_summary": "s", "long_summary": "l", **base, **ids}


@pytest.fixture
def mem(tmp_path: Path) -> SyncEpisodicMemory:
    return SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())


@pytest.mark.parametrize("field", ["user_id", "agent_id", "conversation_id"])
def test_reads_and_writes_refuse_the_same_long_id(mem: SyncEpisodicMemory, field: str) -> None:
    try:
        ids: dict[str, Any] = {"user_id": "u", "agent_id": "a", "conversation_id": "c", field: LONG}
        with pytest.raises(ValidationError, match="512"):
            mem.memorize(**_episode(**{field: LONG}))
        with pytest.raises(ValidationError, match="at most 512 characters"):
            mem.recall(query="s", **ids)
        with pytest.raises(ValidationError, match="at most 512 characters"):
            mem.count(**ids)
        with pytest.raises(ValidationError, match="at most 512 characters"):
            mem.forget(**ids) if field == "conversation_id" else mem.forget(
                user_id=ids["user_id"], agent_id=ids["agent_id"], everything=True
            )
        # At the limit, both sides accept it.
        mem.memorize(**_episode(**{field: LIMIT}))
        limit_ids: dict[str, Any] = {**ids, field: LIMIT}
        assert mem.count(**limit_ids) == 1
        assert mem.recall(query="s", **limit_ids)
    finally:
        mem.close()


def test_blank_and_surrogate_ids_are_refused_by_reads_too(mem: SyncEpisodicMemory) -> None:
    try:
        for bad in ("   ", "u\ud800"):
            with pytest.raises(ValidationError):
                mem.memorize(**_episode(user_id=bad))
            with pytest.raises(ValidationError):
                mem.count(user_id=bad, agent_id="a")
    finally:
        mem.close()


def test_lesson_ids_follow_the_same_rule(tmp_path: Path) -> None:
    memory = SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    lessons = SyncStepLessonMemory(StepLessonMemory(memory.engine, HashEmbedder()))
    try:
        for ids in (
            {"session_id": LONG, "user_id": "u", "agent_id": "a"},
            {"session_id": "s", "user_id": LONG, "agent_id": "a"},
            {"session_id": "s", "user_id": "u", "agent_id": "   "},
        ):
            with pytest.raises(ValidationError):
                lessons.init_episode(
                    ids["session_id"], user_id=ids["user_id"], agent_id=ids["agent_id"]
                )
            with pytest.raises(ValidationError):
                lessons.count(ids["session_id"], user_id=ids["user_id"], agent_id=ids["agent_id"])
        with pytest.raises(ValidationError, match="run_id"):
            lessons.init_episode("s", user_id="u", agent_id="a", run_id=LONG)
        lessons.init_episode(LIMIT, user_id=LIMIT, agent_id="a", run_id=LIMIT)
        assert lessons.count(LIMIT, user_id=LIMIT, agent_id="a") == 0
    finally:
        memory.close()
