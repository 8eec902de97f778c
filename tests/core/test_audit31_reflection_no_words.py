"""A reflective LLM answer without a single letter or digit is no lesson.

`ReflectiveMemory` refused an empty or blank answer, but `"\\x00"`, a zero-width space, an
escape character or `"..."` passed and were stored as the episode's lesson, then shown to the
model in every recalled block as if it were one. Such an answer is now an unusable answer like
a blank one: the episode is stored without a lesson and the failure counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import Episode, JSONLTaskStore, ReflectiveMemory, Task


@pytest.mark.parametrize("answer", ["\x00", "\u200b", "\x1b", "...", " \t- ", "\ufffd"])
async def test_an_answer_without_words_is_no_lesson(tmp_path: Path, answer: str) -> None:
    async def llm(prompt: str) -> str:
        return answer

    with JSONLTaskStore(tmp_path) as store:
        memory = ReflectiveMemory(store, llm)
        stored = await memory.record(Episode(task=Task(instruction="Convert 3 miles to km")))
        assert not (stored.additional_data or {}).get("reflection")
        assert memory.reflection_failures == 1
        assert isinstance(memory.last_reflection_error, ValueError)
        assert [e.id_ for e in await store.read_recent(5)] == [stored.id_]


@pytest.mark.parametrize("answer", ["Check the units first.", "Ok", "7", "Überprüfe die Einheit."])
async def test_an_answer_with_words_is_the_lesson(tmp_path: Path, answer: str) -> None:
    async def llm(prompt: str) -> str:
        return answer

    with JSONLTaskStore(tmp_path) as store:
        memory = ReflectiveMemory(store, llm)
        stored = await memory.record(Episode(task=Task(instruction="Convert 3 miles to km")))
        assert stored.additional_data == {"reflection": answer}
        assert memory.reflection_failures == 0
