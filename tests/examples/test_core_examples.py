"""The core cookbook examples run offline and print what they claim to show.

Each example runs as its own process (`sys.executable`, from the repository root, with
`HF_HUB_OFFLINE=1`), the way a reader runs it; the assertions read its output.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

# Slow: runs the example scripts as processes; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_example(
    name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("QDRANT_")}
    full_env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def lines_of(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return proc.stdout.splitlines()


@pytest.fixture(scope="module")
def support_bot() -> subprocess.CompletedProcess[str]:
    return run_example("support_bot.py")


def test_support_bot_recalls_same_and_previous_conversations(
    support_bot: subprocess.CompletedProcess[str],
) -> None:
    assert support_bot.returncode == 0, support_bot.stderr
    out = lines_of(support_bot)
    assert out[0] == "stored 7 episodes for 2 customers"
    same = out.index("  same_conversation:")
    prev = out.index("  previous_conversations:")
    same_rows = out[same + 1 : prev]
    assert len(same_rows) == 1
    assert same_rows[0].endswith("[alice-0408] Alice is checking her card statement")
    # The refund is the best match from earlier conversations; nothing of the current one leaks in.
    assert out[prev + 1].endswith("[alice-0320] Refund for the cracked blender jar (order 1207)")
    prev_rows = [line for line in out[prev + 1 : prev + 4] if line.startswith("    ")]
    assert len(prev_rows) == 3
    assert not any("alice-0408" in row for row in prev_rows)


def test_support_bot_prints_the_prompt_block_within_budget(
    support_bot: subprocess.CompletedProcess[str],
) -> None:
    out = support_bot.stdout
    fit = re.search(
        r"prompt block: (\d+) of (\d+) recalled episodes fit in 350 tokens \((\d+) used\)", out
    )
    assert fit is not None, out
    kept, recalled, used = map(int, fit.groups())
    assert recalled == 4
    assert 1 <= kept < recalled
    assert used <= 350
    block = out[out.index("<recalled_episodes>") : out.index("</recalled_episodes>")]
    assert block.count("<episode ") == kept
    assert "<summary>Refund for the cracked blender jar (order 1207)</summary>" in block
    assert "<tools>lookup_order, create_return, issue_refund</tools>" in block
    assert "recall_block gives the same block: True" in out


def test_support_bot_reports_behaviour_stats(support_bot: subprocess.CompletedProcess[str]) -> None:
    out = lines_of(support_bot)
    alice = out.index("alice: 4 episodes in 3 conversations, 2025-03-02 to 2025-04-08")
    assert out[alice + 1].startswith("  top flows: returns x2")
    assert out[alice + 2].startswith("  top tools: ")
    assert out[alice + 2].count(" x1") == 3  # top=3, and each of alice's tools was used once
    assert out[alice + 3] == "  sentiment: mean -0.15, trend +0.28 per episode (improving)"
    bob = out.index("bob: 3 episodes in 3 conversations, 2025-03-05 to 2025-04-02")
    assert out[bob + 1].startswith("  top flows: account_access x2")
    assert out[bob + 3] == "  sentiment: mean +0.00, trend -0.55 per episode (declining)"
    assert out[bob + 4] == "  -> bob is getting less happy: route the next chat to a senior agent"
    assert not any(line.startswith("  -> alice") for line in out)


def test_support_bot_keeps_users_apart(support_bot: subprocess.CompletedProcess[str]) -> None:
    assert lines_of(support_bot)[-1] == (
        "bob asks about the blender refund: 3 episodes recalled, all bob's: True, alice's among them: 0"
    )


def test_support_bot_keeps_its_store_with_path_and_rerun_does_not_duplicate(tmp_path: Path) -> None:
    for _ in range(2):
        proc = run_example("support_bot.py", "--path", str(tmp_path / "memory"))
        assert proc.returncode == 0, proc.stderr
        assert "alice: 4 episodes in 3 conversations, 2025-03-02 to 2025-04-08" in proc.stdout
    assert (tmp_path / "memory").is_dir()


def test_export_forget_import() -> None:
    proc = run_example("export_forget_import.py")
    assert proc.returncode == 0, proc.stderr
    out = lines_of(proc)
    assert out == [
        "stored: {'support': 3, 'billing': 2} for alice, 1 for bob",
        "exported 5 episodes to alice.jsonl",
        "forgot 3 episodes of alice with agent 'support'",
        "forgot 2 episodes of alice with agent 'billing'",
        "after forgetting: {'support': 0, 'billing': 0}",
        "recall for alice: 0 episodes",
        "bob still has 1 episode",
        "imported 5 episodes into a fresh store: {'support': 3, 'billing': 2}",
        "same ids as before: True",
        "recall after import: 'Refund for the cracked blender jar'",
        "strict: ImportFileError, 2 bad lines, 0 imported",
        out[11],
        out[12],
        "skip: imported 3, skipped lines [2, 4]",
    ]
    assert out[11].startswith("  line 2: not JSON:")
    assert out[12].startswith("  line 4: invalid episode: average_user_sentiment")


def test_qdrant_server_without_url_explains_and_does_not_connect() -> None:
    proc = run_example("qdrant_server.py")
    assert proc.returncode == 0, proc.stderr
    out = lines_of(proc)
    assert out[0] == "QDRANT_URL is not set: did not connect to any server."
    assert "  QDRANT_URL=http://localhost:6333 python examples/qdrant_server.py" in out
    assert any("collection_prefix=" in line and "timeout=" in line for line in out)


def test_qdrant_server_with_unreachable_url_reports_it() -> None:
    proc = run_example(
        "qdrant_server.py",
        env={
            "QDRANT_URL": "http://127.0.0.1:9",
            "QDRANT_API_KEY": "not-a-real-key",
            "QDRANT_TIMEOUT": "2",
        },
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = lines_of(proc)
    assert out[0].startswith("settings: {'url': 'http://127.0.0.1:9', 'api_key': '***'")
    assert "'timeout': 2.0" in out[0]
    assert "not-a-real-key" not in proc.stdout
    assert out[1].startswith("could not reach http://127.0.0.1:9: ")
    assert "unreachable" in out[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_qdrant_server_round_trip_runs_on_qdrant_client_local_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # No server offline: the same round trip through qdrant-client's local mode, which shares
    # the server code path in episodex (QdrantClientEngine), proves the script's calls are right.
    example = _load("qdrant_server")
    await example.round_trip({"location": ":memory:"})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "connected: engine kind 'memory'"
    assert out[1] == "recalled: 'Asked how to reach the Qdrant server'"
    assert re.fullmatch(r"cleaned up: forgot 1 episode of user example-[0-9a-f]{8}", out[2])
