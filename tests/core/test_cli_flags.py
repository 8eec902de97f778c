"""The command line as a newcomer types it (issue 15): flags anywhere, --version, tables,
quiet progress off a terminal, --user with --from-json, exit codes of not-found and strict
imports, --json reports."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from episodex import __version__
from episodex.cli import main

Run = tuple[int, str, str]
IDS = ["--user", "alice", "--agent", "support"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    store = str(tmp_path / "store")
    for n, tool in ((1, "refund"), (2, "refund"), (3, "track")):
        code, _, err = run(
            capsys,
            "--path",
            store,
            "add",
            *IDS,
            "--conversation",
            f"c{n}",
            "--short",
            f"episode {n}",
            "--long",
            f"long {n}",
            "--tool",
            tool,
            "--sentiment",
            "0.5",
        )
        assert code == 0, err
    return store


def test_global_flags_work_after_the_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = _store(capsys, tmp_path)
    before = run(capsys, "--path", store, "--json", "stats", *IDS)
    after = run(capsys, "stats", *IDS, "--path", store, "--json")
    assert before[0] == after[0] == 0
    assert json.loads(after[1])["episodes"] == 3
    assert json.loads(before[1]) == json.loads(after[1])
    # A flag given before the command is not reset by the command's parser.
    mixed = run(capsys, "--json", "stats", "--path", store, *IDS)
    assert mixed[0] == 0 and json.loads(mixed[1])["episodes"] == 3


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"episodex {__version__}"


def test_human_stats_are_tables(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = _store(capsys, tmp_path)
    code, out, _ = run(capsys, "--path", store, "stats", *IDS)
    assert code == 0
    assert "[(" not in out and "datetime" not in out and "None" not in out
    lines = out.splitlines()
    assert lines[0] == "user alice with agent support"
    assert any(line.split() == ["episodes", "3"] for line in lines)
    assert any(line.split() == ["tool", "episodes"] for line in lines)
    assert any(line.split() == ["refund", "2"] for line in lines)
    assert any(line.split() == ["track", "1"] for line in lines)


def test_progress_bar_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(capsys, tmp_path)
    export = tmp_path / "e.jsonl"
    assert run(capsys, "--path", store, "export", *IDS, "-o", str(export))[0] == 0
    code, out, err = run(capsys, "--path", str(tmp_path / "other"), "import", str(export))
    assert (code, out) == (0, "imported 3 episode(s)\n")
    assert "importing" not in err and "\r" not in err  # captured stderr is not a terminal

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["--path", str(tmp_path / "third"), "import", str(export)]) == 0
    assert "importing" in terminal.getvalue() and "3/3" in terminal.getvalue()


def test_add_from_json_applies_or_refuses_the_id_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "store")
    record = {"short_summary": "s", "long_summary": "l", "agent_id": "a", "conversation_id": "c"}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(record)))
    code, out, err = run(capsys, "--path", store, "add", "--from-json", "-", "--user", "zed")
    assert code == 0, err
    point = out.strip()
    code, out, _ = run(capsys, "--path", store, "--json", "export", "--user", "zed", "--agent", "a")
    assert json.loads(out)["point_id"] == point  # --user was applied
    # A flag that disagrees with the JSON is refused, and nothing is written.
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({**record, "user_id": "amy"})))
    code, _, err = run(capsys, "--path", store, "add", "--from-json", "-", "--user", "zed")
    assert code == 2 and "--user 'zed' disagrees with user_id 'amy'" in err
    # Content flags belong in the JSON.
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({**record, "user_id": "zed"})))
    code, _, err = run(capsys, "--path", store, "add", "--from-json", "-", "--short", "x")
    assert code == 2 and "--short cannot be combined with --from-json" in err
    code, out, _ = run(capsys, "--path", store, "--json", "stats", "--user", "zed", "--agent", "a")
    assert json.loads(out)["episodes"] == 1


def test_forget_of_an_unknown_point_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = _store(capsys, tmp_path)
    unknown = "00000000-0000-4000-8000-000000000000"
    code, out, err = run(capsys, "--path", store, "forget", *IDS, "--point", unknown)
    assert (code, out) == (3, "") and f"no episode '{unknown}'" in err
    code, out, _ = run(capsys, "--path", store, "--json", "stats", *IDS)
    assert json.loads(out)["episodes"] == 3


def test_strict_import_errors_name_skip_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"short_summary": "s"}\n')
    code, _, err = run(capsys, "--path", str(tmp_path / "s"), "import", str(bad))
    assert code == 2 and "rerun with --skip-errors" in err and "errors='skip'" not in err


def test_export_json_reports_in_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = _store(capsys, tmp_path)
    target = tmp_path / "out.jsonl"
    code, out, err = run(capsys, "--path", store, "export", *IDS, "-o", str(target), "--json")
    assert code == 0 and err == ""
    assert json.loads(out) == {"exported": 3, "output": str(target)}
    assert len(target.read_text().splitlines()) == 3


def test_the_installed_command_takes_flags_after_the_command(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "episodex", "stats", *IDS, "--path", str(tmp_path / "no")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 3 and "no store at" in proc.stderr
