"""`episodex export` to stdout writes UTF-8 JSONL whatever the terminal's encoding.

A backup taken as `episodex export ... > backup.jsonl` in a shell whose locale is not UTF-8
used to stop at the first episode with a character that encoding lacks: a truncated file
and exit 2, though the export to `--output` and `import` are UTF-8 always.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodex.cli import main

SUMMARIES = ["plain first", "café ☕ second", "naïve 東京 third"]


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_export_to_stdout_is_whole_utf8_jsonl(tmp_path: Path, encoding: str) -> None:
    store = str(tmp_path / "s")
    for n, short in enumerate(SUMMARIES):
        args = ["--path", store, "add", "--user", "u", "--agent", "a", "--conversation", f"c{n}"]
        assert main([*args, "--short", short, "--long", f"{short} (long)"]) == 0
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "episodex",
            "--path",
            store,
            "export",
            "--user",
            "u",
            "--agent",
            "a",
        ],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": encoding},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    records = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]
    assert sorted(r["short_summary"] for r in records) == sorted(SUMMARIES)
    # What was exported imports back unchanged into a new store.
    backup = tmp_path / "backup.jsonl"
    backup.write_bytes(proc.stdout)
    assert main(["--path", str(tmp_path / "t"), "import", str(backup)]) == 0
