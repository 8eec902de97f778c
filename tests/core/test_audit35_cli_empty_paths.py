"""Every file or folder argument of the command line given empty is a usage error.

`--path ""`, `--url ""` and `export -o ""` were refused already (a variable that was not set
must not mean "the default"). The other places were not: `demo --keep ""` kept the demo's
made-up episodes in the current folder (Path("") is "."), `import ""` said " is a folder",
and `add --from-json ""` was read as no --from-json at all. Each now exits 2 saying which
flag is empty, before anything is read or written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodex.cli import main

IDS = ["--user", "u", "--agent", "a"]


def test_demo_keep_empty_makes_no_store_in_the_current_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "EPISODEX_PATH"}
    done = subprocess.run(
        [sys.executable, "-m", "episodex", "demo", "--keep", ""],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--keep is empty" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["demo", "--keep", " "], "--keep"),
        (["import", ""], "the import file's name"),
        (["import", "  ", "--skip-errors"], "the import file's name"),
        (["add", "--from-json", "", *IDS, "--conversation", "c"], "--from-json"),
        (["add", "--from-json", "", *IDS, "--short", "s", "--long", "l"], "--from-json"),
    ],
)
def test_an_empty_file_or_folder_argument_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    flag: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    place = [] if argv[0] == "demo" else ["--path", str(store)]
    with pytest.raises(SystemExit) as info:
        main([*place, *argv])
    out, err = capsys.readouterr()
    assert info.value.code == 2
    assert out == "" and f"{flag} is empty" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
