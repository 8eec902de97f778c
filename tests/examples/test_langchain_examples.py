"""The LangChain cookbook examples run offline and print what they claim to show.

Each example runs as its own process, the way a reader runs it, with no API key (so the
scripted chat models answer) and `HF_HUB_OFFLINE=1`; the assertions read its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Slow: runs the example scripts as processes; `pytest -m "not slow"` leaves it out.
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


def block_after(out: list[str], header: str) -> list[str]:
    start = out.index(header) + 1
    end = out.index("</recalled_episodes>", start)
    assert out[start] == "<recalled_episodes>"
    return out[start : end + 1]


def test_classic_chain_recalls_monday_on_thursday() -> None:
    out = run("langchain_classic_chain.py")
    assert out[0] == "monday: Sorry about that! I have issued a refund of 39 EUR for order 1182."
    block = block_after(out, "recalled on thursday:")
    assert '<previous_conversations title="From previous conversations">' in block
    assert "<summary>My kettle from order 1182 arrived with a cracked lid.</summary>" in block
    assert (
        "assistant: Sorry about that! I have issued a refund of 39 EUR for order 1182.</details>"
        in block
    )
    assert any('conversation="monday"' in line for line in block)
    assert "thursday: Yes: the 39 EUR refund for order 1182 was issued on Monday." in out
    assert out[-1] == "bob recalls: ''"


def test_agent_middleware_records_the_run_with_its_tools() -> None:
    out = run("langchain_agent_middleware.py")
    assert (
        out[0]
        == "tuesday: Your parcel 1182 is at the Leeds depot; redelivery is booked for Friday."
    )
    block = block_after(out, "recalled on thursday:")
    assert "<summary>Where is my parcel for order 1182?</summary>" in block
    assert "assistant: [called track_parcel]" in block
    assert "<tools>track_parcel</tools>" in block
    assert any('conversation="tuesday"' in line for line in block)
    assert "thursday: It is at the Leeds depot; the redelivery is on Friday." in out
    # The memory tool, called by the model, finds Tuesday's run for Alice.
    assert "search_memory found tuesday: True" in out
    assert "friday: Your redelivery for order 1182 was booked for Friday." in out
    assert "bob recalls: ''" in out
    # agent.batch with one config per user: each run recalls its own user's memory only.
    assert out[-2:] == [
        "batch alice recalls parcel 1182: True",
        "batch bob recalls parcel 1182: False",
    ]


def test_lcel_chain_recalls_march_in_april() -> None:
    out = run("langchain_lcel.py")
    assert out[0] == "march: Done: aisle seat, vegetarian meal, Oslo on 3 May."
    block = block_after(out, "recalled in april:")
    assert "<summary>Book Oslo on 3 May, aisle seat, vegetarian meal please.</summary>" in block
    assert any('conversation="march"' in line for line in block)
    assert out[-1] == "april: Aisle, with a vegetarian meal."
