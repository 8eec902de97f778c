"""`episodex import` of a file with nothing to import leaves no store behind.

An empty file, one of blank lines, or (with `--skip-errors`) one whose every line is bad
imported nothing but opened, and so created, a store at a new `--path`: `export`, `stats` and
`recall` there then answered from an empty store instead of exiting 3 ("no store"), and a
mistyped file (an empty one) looked like a successful import.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodex.cli import main


@pytest.mark.parametrize(
    ("content", "flags", "skipped"),
    [
        ("", [], []),
        ("\n  \n\n", [], []),
        ("{not json\n\n[1, 2]\n", ["--skip-errors"], [1, 3]),
    ],
    ids=["empty", "blank-lines", "only-bad-lines-skipped"],
)
def test_an_import_with_nothing_to_import_creates_no_store(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: str,
    flags: list[str],
    skipped: list[int],
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(content, encoding="utf-8")
    store = tmp_path / "store"
    assert main(["--path", str(store), "--json", "import", *flags, str(source)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["imported"] == 0
    assert [line for line, _ in report["skipped"]] == skipped
    assert not store.exists()
    assert main(["--path", str(store), "export", "--user", "u", "--agent", "a"]) == 3
    # Said the same way without --json: nothing imported, each bad line named.
    assert main(["--path", str(store), "import", *flags, str(source)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "imported 0 episode(s)\n"
    assert [line for line in captured.err.splitlines() if line.startswith("skipped line")] == [
        f"skipped line {n}: " + why for n, why in report["skipped"]
    ]
    assert not store.exists()


def test_an_empty_import_into_a_store_leaves_its_episodes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    args = ["--path", str(store)]
    add = ["add", "--user", "u", "--agent", "a", "--conversation", "c"]
    assert main([*args, *add, "--short", "kept", "--long", "kept, long"]) == 0
    capsys.readouterr()
    source = tmp_path / "in.jsonl"
    source.write_text("", encoding="utf-8")
    assert main([*args, "import", str(source)]) == 0
    assert capsys.readouterr().out == "imported 0 episode(s)\n"
    assert main([*args, "export", "--user", "u", "--agent", "a"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["short_summary"] for line in lines] == ["kept"]
