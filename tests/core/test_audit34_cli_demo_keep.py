"""`episodex demo --keep DIR` writes its demo episodes only into a new or empty folder.

Given a folder holding a store (the user's own, or the one an earlier demo kept), the demo
memorized its seven episodes of `alice` and `bob` with `support-bot` into it: a real user of
that name got a stranger's episodes, and every rerun doubled them. Given a folder holding other
files, it made its store among them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodex.cli import main

ALICE = ["--user", "alice", "--agent", "support-bot"]


def _alice_episodes(capsys: pytest.CaptureFixture[str], store: Path) -> int:
    capsys.readouterr()
    assert main(["--path", str(store), "--json", "stats", *ALICE]) == 0
    return json.loads(capsys.readouterr().out)["episodes"]


def test_demo_into_a_folder_holding_a_store_is_refused_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    added = [
        "--path", str(store), "add", *ALICE, "--conversation", "c1",
        "--short", "my own episode", "--long", "a real user's episode", "--end", "2",
    ]  # fmt: skip
    assert main(added) == 0
    assert _alice_episodes(capsys, store) == 1

    assert main(["demo", "--keep", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("episodex: error: ") and "not empty" in err and "Traceback" not in err
    assert _alice_episodes(capsys, store) == 1


def test_demo_into_a_folder_of_other_files_is_refused_and_leaves_it_as_it_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["demo", "--keep", str(folder)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
