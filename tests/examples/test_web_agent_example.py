"""`examples/web_agent_lessons.py` runs offline and shows an agent learning from step lessons."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Slow: runs the example script as a process; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def output() -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QDRANT_")}
    env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "web_agent_lessons.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def attempt(output: str, rep: int) -> list[str]:
    text = output.split(f"=== attempt {rep} ===\n", 1)[1]
    return text.split("\n\n", 1)[0].splitlines()


def test_first_attempt_has_no_lessons_and_fails(output: str) -> None:
    lines = attempt(output, 1)
    assert lines == [
        "lessons block at the first step:",
        "(no lessons: the first attempt is the baseline)",
        "actions: click('12') click('13') click('40')",
        "result: failed — 1 expected action(s) not done: click('30')",
    ]


def test_second_attempt_gets_a_repeat_and_an_avoid_and_succeeds(output: str) -> None:
    lines = attempt(output, 2)
    assert lines[1:5] == [
        "# Lessons From Previous Attempt",
        "These are results from a PREVIOUS attempt at this task.",
        "- REPEAT: actions that worked before — do them again now",
        "- AVOID: mistakes from before — do NOT repeat them",
    ]
    assert re.fullmatch(r"1\. REPEAT: \[/tickets/7 \d+%\] click: 'Priority dropdown'", lines[5])
    assert re.fullmatch(r"2\. AVOID: \[/tickets/7 \d+%\] click: 'Delete button'", lines[7])
    assert lines[9] == "   Do this instead: click('30') (choose 'High' in the priority dropdown)"
    assert lines[-2:] == ["actions: click('12') click('30')", "result: succeeded"]


def test_third_attempt_succeeds_and_exports_round_trip(output: str) -> None:
    assert attempt(output, 3)[-1] == "result: succeeded"
    assert output.rstrip().splitlines()[-2:] == [
        "json export: 7 step memories, round-trip ok",
        "csv export: 7 step memories, round-trip ok",
    ]
