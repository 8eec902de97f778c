"""`examples/task_agent_reflective.py` runs offline and shows what it claims to show."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Slow: runs the example script as a process; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "task_agent_reflective.py"


@pytest.fixture(scope="module")
def output() -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY",) and not k.startswith("QDRANT_")
    }
    env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_agent_loop_records_three_tasks_with_lessons(output: str) -> None:
    assert output.startswith("LLM: fake LLM")
    assert (
        "=== task 1: Convert 3 miles to kilometres\n--- system prompt (no recalled episodes)"
        in output
    )
    assert output.count("--- system prompt (with recalled episodes)") == 2
    lessons = re.findall(r"--- lesson recorded: (.*)", output)
    assert lessons == [
        "Multiply miles by 1.609 and give the unit in the answer.",
        "Lead a summary with the decision, then list the actions.",
        "Divide by 1.609 to go from kilometres to miles, and round to two decimals.",
    ]
    assert "--- reflection failures: 0" in output


def test_each_prompt_holds_one_well_formed_block(output: str) -> None:
    blocks = re.findall(r"<recalled_episodes>.*?</recalled_episodes>", output, flags=re.S)
    assert len(blocks) == 3  # before task 2, before task 3, and for the next task
    sizes = [len(ET.fromstring(block)) for block in blocks]
    assert sizes == [1, 2, 3]
    last = ET.fromstring(blocks[-1])
    assert {ep.findtext("task") for ep in last} == {
        "Convert 3 miles to kilometres",
        "Convert 10 kilometres to miles",
        "Summarise the meeting notes: budget approved, launch moved to May, hire two engineers",
    }
    assert all(ep.findtext("reflection") for ep in last)  # every recalled episode has its lesson


def test_the_summary_reports_the_store(output: str) -> None:
    assert "HybridMemory (fuses the last 1 and the 2 most similar)" in output
    assert "QdrantTaskStore (collection 'task_episodes' on edge): 3 episodes" in output
    assert "newest:" in output and "| Convert 10 kilometres to miles" in output
