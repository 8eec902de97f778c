"""A web agent that learns from its earlier attempts: step lessons (REPEAT / AVOID).

A tiny simulated help-desk app and a rule-following "agent" stand in for a browser and a
model, so this runs offline in a second. The task is "set ticket 7 to High priority": open the
Priority dropdown (`click('12')`), then choose High (`click('30')`).

    python examples/web_agent_lessons.py

Attempt 1 has no lessons and fails (the agent deletes the ticket). Each attempt is recorded
step by step, stored, and graded by a `ProgrammaticGrader`; attempt 2 gets a REPEAT for the
right click and an AVOID (with the correction) for the wrong one, follows them and succeeds.
The lessons are stored next to the episodes (same folder, own collection) and export to JSON
and CSV without loss.
"""

from __future__ import annotations

import asyncio
import re
import tempfile

from episodex import (
    EnvState,
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    export_memories,
    import_memories,
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
    "ticket": ("https://helpdesk.example/tickets/7", TICKET),
    "dropdown": (
        "https://helpdesk.example/tickets/7",
        [*TICKET, "[30] option 'High'", "[31] option 'Low'"],
    ),
    "confirm": (
        "https://helpdesk.example/tickets/7/delete",
        ["[40] button 'Confirm delete'", "[41] button 'Cancel'"],
    ),
    "deleted": ("https://helpdesk.example/tickets", ["[50] text 'Ticket deleted'"]),
    "done": ("https://helpdesk.example/tickets/7", [*TICKET[:5], "[17] text 'Priority: High'"]),
}
MOVES = {
    ("ticket", "12"): "dropdown",
    ("ticket", "13"): "confirm",
    ("dropdown", "30"): "done",
    ("dropdown", "13"): "confirm",
    ("confirm", "40"): "deleted",
    ("confirm", "41"): "ticket",
}
ELEMENT = re.compile(r"^\[(\d+)\] \w+ '(.*)'$")
HABIT = ["Priority dropdown", "Delete button", "Confirm delete"]  # what the agent clicks unaided


class HelpDesk:
    """The simulated web app: a page, its elements, and where each click leads."""

    def __init__(self) -> None:
        self.page = "ticket"

    def observe(self) -> EnvState:
        url, elements = PAGES[self.page]
        return EnvState(url=url, elements=elements)

    def click(self, element_id: str) -> None:
        self.page = MOVES.get((self.page, element_id), self.page)

    @property
    def finished(self) -> bool:
        return self.page in ("done", "deleted")


def choose(env: EnvState, block: str, clicked: set[str]) -> tuple[str, str]:
    """Stand-in for the model: follow the lessons block, else fall back on a bad habit."""
    on_page = {m.group(2): m.group(1) for e in env.elements if (m := ELEMENT.match(e))}
    by_id = {v: k for k, v in on_page.items()}
    avoid = set(re.findall(r"^\d+\. AVOID: \[[^\]]*\] click: '(.*)'$", block, re.MULTILINE))
    for element_id in re.findall(r"Do this instead: click\('(\d+)'\)", block):
        if element_id in by_id and by_id[element_id] not in avoid:
            return element_id, by_id[element_id]
    repeats = re.findall(r"^\d+\. REPEAT: \[[^\]]*\] click: '(.*)'$", block, re.MULTILINE)
    for text in [*repeats, *HABIT]:
        if text in on_page and text not in avoid and text not in clicked:
            return on_page[text], text
    raise RuntimeError(f"the agent is stuck on {env.path}")


async def attempt(lessons: StepLessonMemory) -> None:
    episode = await lessons.init_episode(
        "ticket-7", user_id="alice", agent_id="helpdesk-bot", task=TASK
    )
    print(f"=== attempt {episode.rep} ===")
    app, clicked, actions = HelpDesk(), set[str](), list[str]()
    while not app.finished:
        env = app.observe()
        state = f"Task: {TASK}. I am on {env.path} and the ticket shows {env.elements[-1]}."
        block = await lessons.lessons_block(env, state)
        if not actions:
            print("lessons block at the first step:")
            print(block or "(no lessons: the first attempt is the baseline)")
        element_id, text = choose(env, block, clicked)
        clicked.add(text)
        action = f"click('{element_id}')"
        await lessons.record_step_start(
            env_pre=env, internal_state=state, action=action, action_element_text=text
        )
        app.click(element_id)
        actions.append(action)
    result = await lessons.end_episode(final_env=app.observe())
    print("actions:", " ".join(actions))
    if result is None:
        print("result: not graded")
    elif result.task_success:
        print("result: succeeded")
    else:
        print(f"result: failed — {result.task_incomplete}")
    print()


async def main() -> None:
    grader = ProgrammaticGrader(
        expected_actions=["click('12')", "click('30')"],
        descriptions={"click('30')": "choose 'High' in the priority dropdown"},
    )
    with tempfile.TemporaryDirectory() as folder:
        memory = EpisodicMemory(path=folder)  # the lessons share the episodes' store
        try:
            lessons = StepLessonMemory.from_memory(memory, grader=grader)
            for _ in range(3):
                await attempt(lessons)
            stored = await lessons.load_all_memories_for_session()
            for fmt in ("json", "csv"):
                same = import_memories(export_memories(stored, fmt), fmt) == stored
                print(
                    f"{fmt} export: {len(stored)} step memories, round-trip {'ok' if same else 'LOST DATA'}"
                )
        finally:
            memory.close()


if __name__ == "__main__":
    asyncio.run(main())
