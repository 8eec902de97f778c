"""A write command that fails on its input leaves no store behind at a new path.

`add` and `import` opened (so created) the store before reading their input: `import` of a
mistyped file name, or `add` of an incomplete episode, exited 2 but left a new empty store,
on which `export`, `stats` and `recall` then succeeded instead of exiting 3 ("no store").
"""

from __future__ import annotations

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
