"""The command line never shows a traceback and never creates a store by accident (issue 14,
item 15): each case exits with its code and a message."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from episodex.cli import main

Run = tuple[int, str, str]
IDS = ["--user", "u", "--agent", "a"]
RECORD = {"short_summary": "s", "long_summary": "l", "user_id": "u", "agent_id": "a"}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _line(n: int, **extra: object) -> str:
    return json.dumps({**RECORD, "conversation_id": f"c{n}", **extra})


def test_import_of_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--path", str(tmp_path / "s"), "import", str(tmp_path))
    assert code == 2 and "is a folder" in err and "Traceback" not in err


def test_an_overflowing_timestamp(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(_line(1, timestamp_begin="0001-01-01T00:00+05:00") + "\n" + _line(2) + "\n")
    code, _, err = run(capsys, "--path", str(tmp_path / "s"), "import", str(f))
    assert code == 2 and "line 1" in err and "Traceback" not in err
    code, out, err = run(capsys, "--path", str(tmp_path / "s"), "import", "--skip-errors", str(f))
    assert (code, out) == (0, "imported 1 episode(s)\n") and "skipped line 1" in err
    bad = ["add", *IDS, "--conversation", "c", "--short", "s", "--long", "l"]
    code, _, err = run(
        capsys, "--path", str(tmp_path / "s"), *bad[:1], "--from-json", str(tmp_path / "x.json")
    )
    assert code == 2 and "no such file" in err
    (tmp_path / "x.json").write_text(_line(3, timestamp_end="9999-12-31T23:59-05:00"))
    code, _, err = run(
        capsys, "--path", str(tmp_path / "s"), "add", "--from-json", str(tmp_path / "x.json")
    )
    assert code == 2 and "timestamp_end" in err and "Traceback" not in err


def test_export_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    lines = "\n".join(_line(n) for n in range(3000)) + "\n"
    (tmp_path / "many.jsonl").write_text(lines)
    assert main(["--path", store, "import", str(tmp_path / "many.jsonl")]) == 0
    proc = subprocess.run(
        f"{sys.executable} -m episodex --path {store} export --user u --agent a | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert json.loads(proc.stdout)["user_id"] == "u"
    assert proc.stderr == ""  # no traceback, no "Exception ignored" from the final flush
    status = subprocess.run(
        [
            "bash",
            "-c",
            f"set -o pipefail; {sys.executable} -m episodex --path {store} export "
            "--user u --agent a | head -1 >/dev/null",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert status.returncode == 141 and status.stderr == ""


def test_a_missing_dependency_is_named(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["qdrant_client"] = None  # as if the install had lost it
        from episodex.cli import main
        sys.exit(main(["--url", "http://localhost:1", "stats", "--user", "u", "--agent", "a"]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "pip install" in proc.stderr
    assert "qdrant-client" in proc.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["recall", *IDS, "refund"],
        ["export", *IDS],
        ["stats", *IDS],
        ["forget", *IDS, "--all"],
        ["reindex"],
    ],
)
def test_read_commands_on_a_mistyped_path_create_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "memroy"
    code, out, err = run(capsys, "--path", str(typo), *command)
    assert (code, out) == (3, "") and f"no store at {typo}" in err
    assert not typo.exists()
    # An existing folder that holds no store is left as it was, too.
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "--path", str(empty), *command)
    assert code == 3 and list(empty.iterdir()) == []


def test_skip_errors_imports_around_a_line_that_is_not_utf8(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "mixed.jsonl"
    f.write_bytes(
        (_line(1) + "\n").encode()
        + b'{"short_summary": "caf\xe9"}\n'  # Latin-1, not UTF-8
        + (_line(3) + "\n").encode()
    )
    store = str(tmp_path / "s")
    code, _, err = run(capsys, "--path", store, "import", str(f))
    assert code == 2 and "line 2" in err and "UTF-8" in err
    code, out, err = run(capsys, "--path", store, "import", "--skip-errors", str(f))
    assert (code, out) == (0, "imported 2 episode(s)\n")
    assert "skipped line 2: not UTF-8" in err
    # The same through stdin.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "episodex",
            "--path",
            str(tmp_path / "t"),
            "--json",
            "import",
            "--skip-errors",
            "-",
        ],
        input=f.read_bytes(),
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["imported"] == 2 and [line for line, _ in report["skipped"]] == [2]


def test_the_core_import_skips_a_non_utf8_line_of_a_binary_stream(tmp_path: Path) -> None:
    import io

    from episodex import ImportFileError, SyncEpisodicMemory
    from episodex.testing import HashEmbedder

    data = (_line(1) + "\n").encode() + b"\xff\xfe\n" + (_line(3) + "\n").encode()
    with SyncEpisodicMemory(tmp_path / "s", embedder=HashEmbedder()) as mem:
        with pytest.raises(ImportFileError) as info:
            mem.import_(io.BytesIO(data))
        assert [line for line, _ in info.value.errors] == [2]
        assert mem.count(user_id="u", agent_id="a") == 0  # strict: nothing written
        report = mem.import_(io.BytesIO(data), errors="skip")
        assert len(report.imported) == 2 and [n for n, _ in report.skipped] == [2]
        assert "not UTF-8" in report.skipped[0][1]
