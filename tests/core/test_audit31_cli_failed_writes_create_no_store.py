"""A write command that fails on its input leaves no store behind at a new path.

`add` and `import` opened (so created) the store before reading their input: `import` of a
mistyped file name, or `add` of an incomplete episode, exited 2 but left a new empty store,
on which `export`, `stats` and `recall` then succeeded instead of exiting 3 ("no store").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodex.cli import main


@pytest.mark.parametrize(
    "command",
    [
        ["import", "missing.jsonl"],
        ["add", "--from-json", "missing.json"],
        ["add", "--user", "u", "--agent", "a", "--short", "only a short summary"],
        ["add", "--user", "u", "--agent", "a", "--conversation", "c", "--sentiment", "2"],
    ],
    ids=["import-missing-file", "add-missing-file", "add-incomplete", "add-out-of-range"],
)
def test_a_failed_write_creates_no_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    store = tmp_path / "store"
    [*head, last] = command
    if last.endswith(".json") or last.endswith(".jsonl"):
        command = [*head, str(tmp_path / last)]
    assert main(["--path", str(store), *command]) == 2
    assert "episodex: error:" in capsys.readouterr().err
    assert not store.exists()
    assert main(["--path", str(store), "export", "--user", "u", "--agent", "a"]) == 3


def test_a_strict_import_of_a_file_with_a_bad_line_creates_no_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = {
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": "c",
        "short_summary": "a good line",
        "long_summary": "a good line, long",
    }
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(good) + "\n{not json\n" + json.dumps({**good, "user_id": ""}))
    store = tmp_path / "store"
    assert main(["--path", str(store), "import", str(source)]) == 2
    err = capsys.readouterr().err
    assert "2 bad line(s), nothing imported" in err and "line 2" in err and "line 3" in err
    assert "--skip-errors" in err and "errors='skip'" not in err
    assert not store.exists()
    # With --skip-errors the good line is imported, and only it.
    assert main(["--path", str(store), "import", "--skip-errors", str(source)]) == 0
    capsys.readouterr()
    assert main(["--path", str(store), "--json", "export", "--user", "u", "--agent", "a"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line)["short_summary"] for line in lines] == ["a good line"]
