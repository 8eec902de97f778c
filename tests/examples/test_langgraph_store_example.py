"""The LangGraph store example runs offline and prints what it claims to show."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_agent_tools_keep_and_find_facts_per_user_across_reopening() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "OPENAI_"))}
    env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "langgraph_store.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    assert proc.stdout.splitlines() == [
        "alice: Saved as fact-1. Noted.",
        "alice: Saved as fact-2. Noted.",
        "bob: Saved as fact-1. Noted.",
        "recall tool answered:",
        "- Alice is vegetarian.",
        "- Alice dislikes coriander.",
        "alice: A vegetarian risotto, without coriander.",
        "alice's namespaces: [('alice', 'facts')]",
        "bob's facts: ['Bob loves steak.']",
        "after reopening: fact-1 Alice is vegetarian.",
    ]
