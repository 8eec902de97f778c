"""End to end: a simulated help-desk web task over three attempts, learning from graded steps.

The task is "set ticket 7 to High priority": open the Priority dropdown (`click('12')`), then
choose High (`click('30')`). The simulated agent reads only the lessons block, as a model
would: it follows "Do this instead" when that element is on the page, repeats REPEAT actions,
never clicks an AVOID target, and otherwise falls back on a bad habit (the Delete button).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from episodex import (
    Embedder,
    Engine,
    EnvState,
    GradingResult,
    ProgrammaticGrader,
    StepLessonMemory,
    export_memories,
    import_memories,
    open_engine,
)

TASK = "Set ticket 7 to High priority"
TICKET = [
    "[12] button 'Priority dropdown'",
    "[13] button 'Delete button'",
    "[14] link 'Back to list'",
    "[15] textbox 'Comment'",
    "[16] button 'Save'",
    "[17] text 'Priority: Low'",
]
PAGES = {
    "ticket": ("https://helpdesk.test/tickets/7", TICKET),
    "dropdown": (
        "https://helpdesk.test/tickets/7",
        [*TICKET, "[30] option 'High'", "[31] option 'Low'"],
    ),
    "confirm": (
        "https://helpdesk.test/tickets/7/delete",
        ["[40] button 'Confirm delete'", "[41] button 'Cancel'"],
    ),
    "deleted": ("https://helpdesk.test/tickets", ["[50] text 'Ticket deleted'"]),
    "done": ("https://helpdesk.test/tickets/7", [*TICKET[:5], "[17] text 'Priority: High'"]),
}
MOVES = {
    ("ticket", "12"): "dropdown",
    ("ticket", "13"): "confirm",
    ("dropdown", "30"): "done",
    ("dropdown", "31"): "ticket",
    ("dropdown", "12"): "ticket",
    ("dropdown", "13"): "confirm",
    ("confirm", "40"): "deleted",
    ("confirm", "41"): "ticket",
}
ELEMENT = re.compile(r"^\[(\d+)\] \w+ '(.*)'$")
HABIT = ["Priority dropdown", "Delete button", "Confirm delete"]  # what the agent clicks unaided


@dataclass
class HelpDesk:
    """A four-page web app: clicks move between pages; `done` and `deleted` end the task."""

    page: str = "ticket"

    def observe(self) -> EnvState:
        url, elements = PAGES[self.page]
        return EnvState(url=url, elements=elements)

    def act(self, action: str) -> None:
        match = re.fullmatch(r"click\('(\d+)'\)", action)
        if match is not None:
            self.page = MOVES.get((self.page, match.group(1)), self.page)

    @property
    def finished(self) -> bool:
        return self.page in ("done", "deleted")


@dataclass
class Agent:
    """Acts on the lessons block text alone."""

    clicked: set[str] = field(default_factory=set[str])

    def choose(self, env: EnvState, block: str) -> tuple[str, str]:
        on_page = {m.group(2): m.group(1) for e in env.elements if (m := ELEMENT.match(e))}
        by_id = {v: k for k, v in on_page.items()}
        avoid = set(re.findall(r"^\d+\. AVOID: \[[^\]]*\] click: '(.*)'$", block, re.MULTILINE))
        for element_id in re.findall(r"Do this instead: click\('(\d+)'\)", block):
            if element_id in by_id and by_id[element_id] not in avoid:
                return self._click(element_id, by_id[element_id])
        for text in re.findall(r"^\d+\. REPEAT: \[[^\]]*\] click: '(.*)'$", block, re.MULTILINE):
            if text in on_page and text not in avoid and text not in self.clicked:
                return self._click(on_page[text], text)
        for text in HABIT:
            if text in on_page and text not in avoid and text not in self.clicked:
                return self._click(on_page[text], text)
        return "noop()", ""

    def _click(self, element_id: str, text: str) -> tuple[str, str]:
        self.clicked.add(text)
        return f"click('{element_id}')", text


@dataclass
class Attempt:
    actions: list[str]
    blocks: list[str]
    result: GradingResult | None
    final_page: str


async def run_attempt(lessons: StepLessonMemory, session: str) -> Attempt:
    app, agent = HelpDesk(), Agent()
    await lessons.init_episode(session, user_id="u1", agent_id="helpdesk-bot", task=TASK)
    actions: list[str] = []
    blocks: list[str] = []
    for _ in range(6):
        if app.finished:
            break
        env = app.observe()
        state = f"Task: {TASK}. I am on {env.path} and the ticket shows {env.elements[-1]}."
        block = await lessons.lessons_block(env, state)
        action, target = agent.choose(env, block)
        await lessons.record_step_start(
            env_pre=env,
            internal_state=state,
            action=action,
            action_element_text=target,
            think=f"I will click {target}",
        )
        app.act(action)
        actions.append(action)
        blocks.append(block)
    result = await lessons.end_episode(final_env=app.observe())
    return Attempt(actions, blocks, result, app.page)


GRADER = ProgrammaticGrader(
    expected_actions=["click('12')", "click('30')"],
    descriptions={"click('30')": "choose 'High' in the priority dropdown"},
)


@pytest.fixture(params=["edge", "memory"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    eng = (
        open_engine(path=str(tmp_path / "store"))
        if request.param == "edge"
        else open_engine(location=":memory:")
    )
    yield eng
    eng.close()


async def test_three_attempts_learn_from_graded_steps(engine: Engine, embedder: Embedder) -> None:
    lessons = StepLessonMemory(engine, embedder, grader=GRADER)

    first = await run_attempt(lessons, "ticket-7")
    assert first.actions == ["click('12')", "click('13')", "click('40')"]
    assert first.final_page == "deleted"
    assert all(block == "" for block in first.blocks)  # rep 1: the baseline, no retrieval
    assert first.result is not None and first.result.task_success is False
    assert [g.correct for g in first.result.grades] == [True, False, False]

    second = await run_attempt(lessons, "ticket-7")
    opening = second.blocks[0].splitlines()
    assert opening[:4] == [
        "# Lessons From Previous Attempt",
        "These are results from a PREVIOUS attempt at this task.",
        "- REPEAT: actions that worked before — do them again now",
        "- AVOID: mistakes from before — do NOT repeat them",
    ]
    assert re.fullmatch(r"1\. REPEAT: \[/tickets/7 \d+%\] click: 'Priority dropdown'", opening[4])
    assert opening[5] == "   This worked: Expected step 1 of 2: click('12')"
    assert re.fullmatch(r"2\. AVOID: \[/tickets/7 \d+%\] click: 'Delete button'", opening[6])
    assert opening[8] == "   Do this instead: click('30') (choose 'High' in the priority dropdown)"
    assert len(opening) == 9
    assert second.actions == ["click('12')", "click('30')"]
    assert second.final_page == "done"
    assert second.result is not None and second.result.task_success is True

    third = await run_attempt(lessons, "ticket-7")
    assert third.actions == ["click('12')", "click('30')"] and third.final_page == "done"
    repeat_lines = [line for line in third.blocks[1].splitlines() if ". REPEAT: " in line]
    assert repeat_lines and "'High'" in repeat_lines[0]  # rep 2's success is now a lesson too

    # The scores behind the block: the exact page first, every lesson above the threshold.
    episode = lessons.episode
    assert episode is not None and episode.rep == 3
    env, state = (
        HelpDesk().observe(),
        f"Task: {TASK}. I am on /tickets/7 and the ticket shows {TICKET[-1]}.",
    )
    # The attempt has ended: its lessons for a state are read by passing it.
    found = await lessons.retrieve_memories(env, state, final_k=10, attempt=episode)
    assert found[0].memory.action == "click('12')" and found[0].env_score == 1.0
    assert all(r.env_score >= 0.7 and 0 < r.state_score <= 1.0 + 1e-6 for r in found)
    assert len({(r.memory.action, r.memory.action_element_text) for r in found}) == len(
        found
    )  # deduped

    # Exports round-trip, and an imported copy answers the same in a fresh store.
    everything = await lessons.load_all_memories_for_session(
        "ticket-7", user_id="u1", agent_id="helpdesk-bot"
    )
    assert [(m.rep, m.step_num) for m in everything] == [
        (1, 1),
        (1, 2),
        (1, 3),
        (2, 1),
        (2, 2),
        (3, 1),
        (3, 2),
    ]
    for fmt in ("json", "csv"):
        assert import_memories(export_memories(everything, fmt), fmt) == everything  # type: ignore[arg-type]
    block = await lessons.lessons_block(env, state, attempt=episode)
    assert (
        export_memories(await lessons.retrieve_memories(env, state, attempt=episode), "prompt")
        == block
    )

    copy_engine = open_engine(location=":memory:")
    try:
        copy = StepLessonMemory(copy_engine, embedder, grader=GRADER)
        await copy.store_memories(import_memories(export_memories(everything, "csv"), "csv"))
        await copy.init_episode(
            "ticket-7", user_id="u1", agent_id="helpdesk-bot", run_id=episode.run_id
        )
        assert await copy.lessons_block(env, state) == block
    finally:
        copy_engine.close()
