from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from episodex.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_add_recall_export_import_stats_forget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    code, out, _ = run(
        capsys,
        "--path",
        store,
        "add",
        "--user",
        "u",
        "--agent",
        "a",
        "--conversation",
        "c1",
        "--short",
        "Refund for order 42",
        "--long",
        "User got a refund for order 42",
        "--tool",
        "refund",
        "--sentiment",
        "0.5",
        "--metadata",
        '{"k": [1]}',
    )
    assert code == 0
    pid = out.strip()
    code, out, _ = run(
        capsys,
        "--path",
        store,
        "--json",
        "recall",
        "--user",
        "u",
        "--agent",
        "a",
        "order 42 refund",
    )
    assert code == 0
    res = json.loads(out)
    assert res["previous_conversations"][0]["point_id"] == pid
    assert res["previous_conversations"][0]["metadata"] == {"k": [1]}
    code, out, _ = run(
        capsys, "--path", store, "recall", "--user", "u", "--agent", "a", "--block", "refund"
    )
    assert out.startswith("<recalled_episodes>")
    export = tmp_path / "e.jsonl"
    assert (
        run(capsys, "--path", store, "export", "--user", "u", "--agent", "a", "-o", str(export))[0]
        == 0
    )
    assert json.loads(export.read_text())["point_id"] == pid
    code, out, _ = run(capsys, "--path", store, "--json", "stats", "--user", "u", "--agent", "a")
    assert json.loads(out)["top_tools"] == [["refund", 1]]
    code, out, _ = run(capsys, "--path", store, "forget", "--user", "u", "--agent", "a", "--all")
    assert (code, out) == (0, "deleted 1 episode(s)\n")
    code, out, _ = run(capsys, "--path", store, "import", str(export))
    assert (code, out) == (0, "imported 1 episode(s)\n")
    code, out, _ = run(capsys, "--path", store, "export", "--user", "u", "--agent", "a")
    assert json.loads(out)["point_id"] == pid


def test_add_from_json_on_stdin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    record = {
        "short_summary": "s",
        "long_summary": "l",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": "c",
    }
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(record)))
    code, out, _ = run(capsys, "--path", str(tmp_path / "s"), "--json", "add", "--from-json", "-")
    assert code == 0 and "point_id" in json.loads(out)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            [
                "add",
                "--user",
                "u",
                "--agent",
                "a",
                "--conversation",
                "c",
                "--short",
                " ",
                "--long",
                "l",
            ],
            2,
            "short_summary",
        ),
        (
            [
                "add",
                "--user",
                "u",
                "--agent",
                "a",
                "--conversation",
                "c",
                "--short",
                "s",
                "--long",
                "l",
                "--metadata",
                "{",
            ],
            2,
            "--metadata is not valid JSON",
        ),
        (
            [
                "add",
                "--user",
                "u",
                "--agent",
                "a",
                "--conversation",
                "c",
                "--short",
                "s",
                "--long",
                "l",
                "--sentiment",
                "3",
            ],
            2,
            "[-1, 1]",
        ),
        (
            [
                "recall",
                "--user",
                "u",
                "--agent",
                "a",
                "q",
                "--short-weight",
                "0",
                "--long-weight",
                "0",
                "--bm25-weight",
                "0",
                "--splade-weight",
                "0",
                "--splade-short-weight",
                "0",
            ],
            2,
            "all 0",
        ),
        (["forget", "--user", "u", "--agent", "a", "--point", "not-a-uuid"], 2, "UUID"),
        (["import", "/no/such/file.jsonl"], 2, "no such file"),
    ],
)
def test_errors_have_exit_codes_and_messages(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    # On an existing store: read commands on a folder without one exit 3 (test_cli_paths.py).
    made = ["add", "--user", "u", "--agent", "a", "--conversation", "c", "--short", "s"]
    assert run(capsys, "--path", str(tmp_path / "s"), *made, "--long", "l")[0] == 0
    got, _out, err = run(capsys, "--path", str(tmp_path / "s"), *args)
    assert got == code and message in err and err.startswith("episodex: ")


def test_bad_import_line_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(
        '{"short_summary": "s", "long_summary": "l", "user_id": "u", "agent_id": "a", "conversation_id": "c"}\n{oops\n'
    )
    code, _, err = run(capsys, "--path", str(tmp_path / "s"), "import", str(f))
    assert code == 2 and "line 2" in err
    code, out, err = run(capsys, "--path", str(tmp_path / "s"), "import", "--skip-errors", str(f))
    assert code == 0 and out == "imported 1 episode(s)\n" and "skipped line 2" in err


def test_usage_error_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["recall"])
    assert info.value.code == 2


@pytest.mark.slow
def test_demo_runs_as_a_command(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "episodex", "demo", "--keep", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "memorized 7 support episodes for 2 users" in out
    assert "1. score" in out and "[short #1, long #1, bm25 #1, splade #1, splade_short #1]" in out
    assert "Alice could not log in after resetting her password." in out.split("prompt block")[0]
    assert out.count("<recalled_episodes>") == 1 and "</recalled_episodes>" in out
    assert "all his own (0 from other users)" in out
