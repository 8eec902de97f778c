"""The LlamaIndex cookbook example runs offline and prints what it claims to show.

It runs as its own process, the way a reader runs it, with no API key and
`HF_HUB_OFFLINE=1`; the assertions read its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Slow: runs the example script as a process; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def run(name: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "OPENAI_"))}
    env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    return proc.stdout.splitlines()


def test_function_agent_recalls_monday_on_thursday() -> None:
    out = run("llamaindex_function_agent.py")
    assert out[:4] == [
        "monday: Sorry about that! I have issued a refund of 39 EUR for order 1182.",
        "monday: Done: future orders go to 12 Elm Street.",
        "monday: You're welcome, bye!",
        "episodes recorded: 3",
    ]
    start = out.index("recalled on thursday:") + 1
    end = out.index("</memory>", start)
    block = out[start : end + 1]
    assert block[:3] == ["<memory>", "<episodes>", "<recalled_episodes>"]
    assert '<previous_conversations title="From previous conversations">' in block
    summaries = [line for line in block if line.startswith("<summary>")]
    # All three of Monday's exchanges were stored (the last one by aflush at session end).
    assert sorted(summaries) == [
        "<summary>My kettle from order 1182 arrived with a cracked lid.</summary>",
        "<summary>Please send my future orders to 12 Elm Street.</summary>",
        "<summary>Thanks, that's all.</summary>",
    ]
    assert (
        "assistant: Sorry about that! I have issued a refund of 39 EUR for order 1182.</details>"
        in block
    )
    assert sum('conversation="monday"' in line for line in block) == 3
    assert "thursday: Yes: the 39 EUR refund for order 1182 was issued on Monday." in out
    assert "bob's prompt has memory: False" in out
    assert out[-3].startswith("retriever: Please send my future orders to 12 Elm Street. (0.")
    # Memory as a tool: the agent's search found Monday's kettle episode, for Alice only.
    assert (
        out[-2]
        == "tool found: <summary>My kettle from order 1182 arrived with a cracked lid.</summary>"
    )
    assert out[-1] == "friday: Your kettle (order 1182) was refunded: 39 EUR, on Monday."
