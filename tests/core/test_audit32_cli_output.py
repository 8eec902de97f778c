"""The command line's output reaches its reader whatever encoding the shell gives stdout.

Under a locale or `PYTHONIOENCODING` whose encoding lacks a character of the answer (`LC_ALL=C`
with `PYTHONUTF8=0`, `latin-1`), `recall`, `stats` and the `--json` answers used to stop with
"episodex: error: 'ascii' codec can't encode character" and exit 2, the code of a bad input,
after the command had run. A closed stdin or stdout (`<&-`, `>&-`) gave a Python traceback,
after the command had stored its episode when stdout was the closed one. `export -o -` wrote a
file named `-`, where `import -` and `add --from-json -` read stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodex.cli import main

IDS = ["--user", "u", "--agent", "a"]
SHORT = "Café refund ☃ 東京"
Run = tuple[int, bytes, str]


def _episodex(*args: str, env: dict[str, str] | None = None, shell: str = "") -> Run:
    command = [sys.executable, "-m", "episodex", *args]
    if shell:
        # A redirection only a shell can make (a closed descriptor).
        command = ["bash", "-c", f'"$0" "$@" {shell}', *command]
    proc = subprocess.run(
        command, capture_output=True, env={**os.environ, **(env or {})}, timeout=300
    )
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "s")
    add = ["--path", path, "add", *IDS, "--conversation", "c1", "--short", SHORT]
    assert main([*add, "--long", f"{SHORT}, the long one", "--tool", "remboursé"]) == 0
    return path


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_answers_print_under_an_encoding_without_their_characters(
    store: str, encoding: str
) -> None:
    env = {"PYTHONIOENCODING": encoding}
    code, out, err = _episodex("--path", store, "recall", *IDS, "refund", "--json", env=env)
    assert (code, err) == (0, "")
    # JSON on stdout, in the stream's encoding, with the characters it lacks escaped.
    answer = json.loads(out.decode(encoding))
    assert answer["previous_conversations"][0]["short_summary_text"] == SHORT
    code, out, err = _episodex("--path", store, "stats", *IDS, "--json", env=env)
    assert (code, err) == (0, "")
    assert json.loads(out.decode(encoding))["top_tools"] == [["remboursé", 1]]
    # For people: the answer, each character the terminal cannot show as its escape.
    code, out, err = _episodex("--path", store, "recall", *IDS, "refund", env=env)
    assert (code, err) == (0, "")
    text = out.decode(encoding)
    assert "refund" in text and "\\u2603" in text
    code, out, err = _episodex("--path", store, "stats", *IDS, env=env)
    assert (code, err) == (0, "")
    assert "rembours" in out.decode(encoding)


def test_a_closed_stdout_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    add = ["--path", path, "add", *IDS, "--conversation", "c", "--short", "s", "--long", "l"]
    code, _, err = _episodex(*add, shell=">&-")
    assert code == 2 and "Traceback" not in err
    assert err.startswith("episodex: error: ") and "stdout" in err and err.count("\n") == 1
    assert not Path(path).exists()


def test_a_closed_stdin_is_a_usage_error(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    for args in (["import", "-"], ["add", "--from-json", "-"]):
        code, _, err = _episodex("--path", path, *args, shell="<&-")
        assert code == 2 and "Traceback" not in err
        assert err.startswith("episodex: error: ") and "stdin" in err and err.count("\n") == 1
    assert not Path(path).exists()


def test_export_to_dash_writes_stdout(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--path", store, "export", *IDS, "-o", "-"]) == 0
    out, _ = capsys.readouterr()
    assert [json.loads(line)["short_summary"] for line in out.splitlines()] == [SHORT]
    assert not (tmp_path / "-").exists()


def test_a_block_budget_without_the_block_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # `recall --max-tokens 50` printed the whole list: the budget was taken and capped nothing.
    argv = ["--path", str(tmp_path / "s"), "recall", "--user", "u", "--agent", "a"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--conversation", "c", "refund", "--max-tokens", "50"])
    out, err = capsys.readouterr()
    assert info.value.code == 2
    assert out == "" and "--max-tokens is the budget of --block" in err
    assert not (tmp_path / "s").exists()
