"""A csv of step memories exported by the previous release imports.

The csv header is the list of `StepMemory` fields, and `embedding_model` was added after the
previous release: its csv exports have every other column but that one. `import_memories`
wanted the header of today's export exactly, so a whole file of the previous release was
refused ("missing ['embedding_model']") though its json twin imported. A header without a
column a later release added now reads as if that column's cells were empty; a header missing
any other column is still refused, and one whose columns are all there in another order or
twice says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    EpisodicMemory,
    ImportFileError,
    StepLessonMemory,
    StepMemory,
    export_memories,
    import_memories,
)
from episodex.testing import HashEmbedder

# What the previous release's export_memories(..., "csv") wrote for one graded step.
_PREVIOUS_RELEASE_CSV = (
    "id,step_id,user_id,agent_id,session_id,run_id,rep,step_num,env_pre,internal_state,think,"
    "internal_state_embedding,action,action_element_text,env_post,outcome,outcome_reason,"
    "correction,confidence,task_incomplete,created_at,metadata\r\n"
    "3f1c1e0a-9a8e-4a43-8d54-1b7a4a1d2e01,s1,alice,web,ticket-7,r1,1,1,"
    '"{""url"": ""https://app.test/tickets/7"", ""page"": null, ""elements"": '
    '[""[12] button \'Save\'""], ""extra"": {}}",set the priority,,,click(\'12\'),,,success,'
    'saved,,0.9,,2026-11-20T09:30:00+00:00,"{""k"": {""n"": [1]}}"\r\n'
)


def _expected() -> StepMemory:
    return StepMemory.parse(
        {
            "id": "3f1c1e0a-9a8e-4a43-8d54-1b7a4a1d2e01",
            "step_id": "s1",
            "user_id": "alice",
            "agent_id": "web",
            "session_id": "ticket-7",
            "run_id": "r1",
            "rep": 1,
            "step_num": 1,
            "env_pre": {"url": "https://app.test/tickets/7", "elements": ["[12] button 'Save'"]},
            "internal_state": "set the priority",
            "action": "click('12')",
            "outcome": "success",
            "outcome_reason": "saved",
            "confidence": 0.9,
            "created_at": "2026-11-20T09:30:00+00:00",
            "metadata": {"k": {"n": [1]}},
        }
    )


def test_a_csv_of_the_previous_release_imports() -> None:
    (step,) = import_memories(_PREVIOUS_RELEASE_CSV, "csv")
    assert step == _expected()
    assert step.embedding_model is None


async def test_a_csv_of_the_previous_release_is_stored_and_read_back(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    try:
        lessons = StepLessonMemory.from_memory(memory)
        await lessons.store_memories(import_memories(_PREVIOUS_RELEASE_CSV, "csv"))
        (stored,) = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="alice", agent_id="web"
        )
    finally:
        memory.close()
    assert stored.model_dump(exclude={"internal_state_embedding", "embedding_model"}) == (
        _expected().model_dump(exclude={"internal_state_embedding", "embedding_model"})
    )
    assert stored.internal_state_embedding is not None


def test_todays_csv_still_round_trips() -> None:
    step = _expected().model_copy(update={"embedding_model": "some-model"})
    (back,) = import_memories(export_memories([step], "csv"), "csv")
    assert back == step


@pytest.mark.parametrize("column", ["outcome", "id", "created_at", "think"])
def test_a_csv_without_another_column_is_still_refused(column: str) -> None:
    header, _, rows = _PREVIOUS_RELEASE_CSV.partition("\r\n")
    names = header.split(",")
    text = ",".join(n for n in names if n != column) + "\r\n" + rows
    with pytest.raises(ImportFileError, match=rf"missing \['{column}'\]"):
        import_memories(text, "csv")


def test_a_header_in_another_order_says_so() -> None:
    header, _, rows = _PREVIOUS_RELEASE_CSV.partition("\r\n")
    names = header.split(",")
    names[1], names[2] = names[2], names[1]
    with pytest.raises(ImportFileError, match="order") as info:
        import_memories(",".join(names) + "\r\n" + rows, "csv")
    assert "missing [], unknown []" not in str(info.value)


def test_a_header_naming_a_column_twice_says_so() -> None:
    header, _, rows = _PREVIOUS_RELEASE_CSV.partition("\r\n")
    with pytest.raises(ImportFileError, match="'step_id' more than once") as info:
        import_memories(header + ",step_id\r\n" + rows, "csv")
    assert "missing [], unknown []" not in str(info.value)
