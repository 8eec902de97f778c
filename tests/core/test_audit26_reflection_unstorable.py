"""`ReflectiveMemory.record` stores the episode even when the LLM's lesson cannot be stored.

`record` caught only a failing LLM call: the copy of the episode carrying the answer was made
outside that check, so an answer with a lone surrogate (text no store can hold) failed its
validation there, `record` raised `ValidationError`, and the episode itself was never stored,
where the documented promise is "when the LLM call fails, the episode is recorded without a
lesson".
"""

from __future__ import annotations

from pathlib import Path

from episodex import Episode, JSONLTaskStore, ReflectiveMemory, Task


async def _unstorable_lesson(prompt: str) -> str:
    return "Check \ud800 the units."  # a lone surrogate: text no store can hold


async def test_a_lesson_the_episode_cannot_store_still_records_the_episode(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        memory = ReflectiveMemory(store, _unstorable_lesson)
        episode = Episode(task=Task(instruction="Convert 3 miles to km"))
        stored = await memory.record(episode)
        assert stored == episode and memory.reflection_failures == 1
        assert [e.id_ for e in await store.read_recent(5)] == [episode.id_]
