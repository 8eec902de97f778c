"""Step lessons in the original camelCase JSON schema, and prompts of plain loaded memories."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from episodex import (
    EpisodicMemory,
    ImportFileError,
    StepLessonMemory,
    export_memories,
    format_lessons,
    import_memories,
)

CAMEL = [
    {
        "id": 17,
        "stepId": 1,
        "userId": "u1",
        "agentId": "web",
        "sessionId": "ticket-7",
        "runId": "run-1",
        "rep": 1,
        "stepNum": 1,
        "envPre": {"url": "https://helpdesk.test/tickets?id=7", "elements": ["[12] Priority"]},
        "internalState": "Goal: set ticket 7 to High",
        "think": "open the dropdown",
        "action": "click('12')",
        "actionElementText": "Priority dropdown",
        "envPost": json.dumps({"url": "https://helpdesk.test/tickets?id=7", "title": "open"}),
        "outcome": "success",
        "outcomeReason": "Correctly opened the priority selector",
        "confidence": 0.85,
        "createdAt": "2024-05-17T09:30:05Z",
        "browser": "firefox",
    },
    {
        "id": 18,
        "stepId": "2",
        "sessionId": "ticket-7",
        "runId": "run-1",
        "rep": 1,
        "stepNum": 2,
        "envPre": {"url": "https://helpdesk.test/tickets?id=7", "elements": ["[13] Delete"]},
        "internalState": "Goal: set ticket 7 to High",
        "action": "click('13')",
        "actionElementText": "Delete button",
        "outcome": "failure",
        "outcomeReason": "Wrong action — task was to change priority",
        "correction": 'Select "High" from the priority dropdown',
        "confidence": 0.72,
        "taskIncomplete": "the ticket was deleted",
        "createdAt": 1715938206000,
    },
]


def test_the_original_camel_case_json_schema_imports() -> None:
    memories = import_memories(json.dumps(CAMEL), user_id="u-default", agent_id="web")
    first, second = memories
    assert first.id == str(uuid.UUID(first.id)) and first.id != second.id
    assert first.metadata["original_id"] == 17 and second.metadata["original_id"] == 18
    assert first.metadata["imported"] == {"browser": "firefox"}  # nothing lost
    assert (first.step_id, second.step_id) == ("1", "2")
    assert (first.user_id, second.user_id) == ("u1", "u-default")  # given ids win
    assert first.action_element_text == "Priority dropdown" and first.think == "open the dropdown"
    assert first.env_post is not None and first.env_post.extra == {"title": "open"}
    assert first.created_at == datetime(2024, 5, 17, 9, 30, 5, tzinfo=UTC)
    assert second.created_at == datetime(2024, 5, 17, 9, 30, 6, tzinfo=UTC)  # epoch ms
    assert second.correction == 'Select "High" from the priority dropdown'
    assert second.task_incomplete == "the ticket was deleted"
    # Importing the same file again gives the same ids (so a re-import replaces, not doubles).
    again = import_memories(json.dumps(CAMEL), user_id="u-default", agent_id="web")
    assert [m.id for m in again] == [m.id for m in memories]
    # Our own schema still imports, and exports of camelCase imports round-trip.
    assert import_memories(export_memories(memories, "json")) == memories
    assert import_memories(export_memories(memories, "csv"), "csv") == memories


def test_a_camel_case_record_without_its_user_is_refused_by_name() -> None:
    with pytest.raises(ImportFileError, match=r"record 2.*user_id="):
        import_memories(json.dumps(CAMEL))
    with pytest.raises(ImportFileError, match="createdAt"):
        import_memories(json.dumps([{**CAMEL[0], "createdAt": 1e30}]))


def test_a_prompt_of_plain_loaded_memories_keeps_the_percentage() -> None:
    memories = import_memories(json.dumps(CAMEL), user_id="u1", agent_id="web")
    expected = (
        "# Lessons From Previous Attempt\n"
        "These are results from a PREVIOUS attempt at this task.\n"
        "- REPEAT: actions that worked before — do them again now\n"
        "- AVOID: mistakes from before — do NOT repeat them\n"
        "1. REPEAT: [/tickets 85%] click: 'Priority dropdown'\n"
        "   This worked: Correctly opened the priority selector\n"
        "2. AVOID: [/tickets 72%] click: 'Delete button'\n"
        "   This failed: Wrong action — task was to change priority\n"
        '   Do this instead: Select "High" from the priority dropdown'
    )
    assert export_memories(memories, "prompt") == expected
    assert format_lessons(memories) == expected


async def test_memories_loaded_from_the_store_keep_the_percentage() -> None:
    memory = EpisodicMemory(location=":memory:")
    try:
        lessons = StepLessonMemory.from_memory(memory)
        await lessons.store_memories(
            import_memories(json.dumps(CAMEL), user_id="u1", agent_id="web")
        )
        loaded = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="u1", agent_id="web"
        )
        assert [m.metadata["original_id"] for m in loaded] == [17, 18]
        lines = export_memories(loaded, "prompt").splitlines()
        assert lines[4] == "1. REPEAT: [/tickets 85%] click: 'Priority dropdown'"
        assert lines[6] == "2. AVOID: [/tickets 72%] click: 'Delete button'"
    finally:
        memory.close()
