"""A page address that `urllib` cannot split still makes a lesson, and never an untyped error.

`EnvState.url` takes any text (the agent's observation gives it), and a stored step's page
path is shown in every lesson line and compares two pages without elements. The path came
from `urllib.parse.urlsplit`, which raises `ValueError` on a bracketed host it cannot read
(`http://[::1`, `http://[tickets]/7`): one such stored step made `lessons_block`,
`retrieve_memories`, `format_lessons` and `export_memories(fmt="prompt")` raise
`ValueError` for every later attempt of the session, so the session lost all its lessons.
Such an address now gives the path after its host, up to `?` or `#`, as plain text does.
"""

from __future__ import annotations

import pytest
from episodex import (
    EnvState,
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    export_memories,
    format_lessons,
)
from episodex.testing import HashEmbedder

USER = {"user_id": "u1", "agent_id": "web"}
PATHS = {
    "http://[::1/tickets/7": "/tickets/7",
    "http://[tickets]/7?x=1": "/7",
    "//[/tickets/7#top": "/tickets/7",
    "https://[::1": "/",
}
BAD_URLS = list(PATHS)


@pytest.mark.parametrize("url", BAD_URLS)
def test_an_address_urllib_cannot_split_has_the_path_after_its_host(url: str) -> None:
    assert EnvState.parse({"url": url}).path == PATHS[url]


@pytest.mark.parametrize("elements", [["[12] button 'Priority'"], []])
@pytest.mark.parametrize("url", BAD_URLS)
async def test_a_step_on_such_a_page_is_a_lesson_for_the_next_attempt(
    url: str, elements: list[str]
) -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    grader = ProgrammaticGrader(expected_actions=["click('12')"])
    lessons = StepLessonMemory.from_memory(memory, grader=grader)
    page = {"url": url, "elements": elements}
    try:
        await lessons.init_episode("ticket-7", **USER, task="set priority")
        await lessons.record_step_start(
            env_pre=page, internal_state="set ticket 7 to high", action="click('13')"
        )
        await lessons.end_episode(final_env=page)
        await lessons.init_episode("ticket-7", **USER, task="set priority")
        found = await lessons.retrieve_memories(page, "set ticket 7 to high")
        assert [lesson.kind for lesson in found] == ["AVOID"]
        block = await lessons.lessons_block(page, "set ticket 7 to high")
        assert f"1. AVOID: [{PATHS[url]} " in block
        stored = await lessons.load_all_memories_for_session("ticket-7", **USER)
        assert stored[0].env_pre.url == url  # kept as it was given
        assert f"1. AVOID: [{PATHS[url]} " in format_lessons(stored)  # its confidence
        assert format_lessons(stored) == export_memories(stored, "prompt")
    finally:
        memory.close()
