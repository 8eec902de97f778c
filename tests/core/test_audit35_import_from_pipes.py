"""An import from a named pipe imports what the pipe gives.

An import reads its file twice (checked, then written). A path that is a pipe gives its
text once: `episodex import /dev/stdin` and `episodex import <(...)` (a /dev/fd path) printed
"imported 0 episode(s)" with exit 0 and made an empty store, and `import_` of a pipe's path
failed as if the file had changed. Such a path is now copied as it is read, as stdin is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from episodex import EpisodicMemory
from episodex.testing import HashEmbedder

IDS = ["--user", "u", "--agent", "a"]
LINES = "".join(
    json.dumps(
        {
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": "c",
            "short_summary": f"s{n}",
            "long_summary": f"l{n}",
        }
    )
    + "\n"
    for n in (1, 2)
)


def _episodex(store: Path, *argv: str, **run: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # pyright: ignore[reportCallIssue, reportUnknownVariableType]
        [sys.executable, "-m", "episodex", "--path", str(store), "--json", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
        **run,  # pyright: ignore[reportArgumentType]
    )


def _count(store: Path) -> int:
    done = _episodex(store, "stats", *IDS)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["episodes"]


def test_import_of_dev_stdin_imports_the_piped_lines(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = _episodex(store, "import", "/dev/stdin", input=LINES)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 2
    assert _count(store) == 2


def test_import_of_a_dev_fd_pipe_imports_its_lines(tmp_path: Path) -> None:
    store = tmp_path / "store"
    read_end, write_end = os.pipe()
    os.write(write_end, LINES.encode("utf-8"))
    os.close(write_end)
    try:
        done = _episodex(store, "import", f"/dev/fd/{read_end}", pass_fds=(read_end,))
    finally:
        os.close(read_end)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 2
    assert _count(store) == 2


async def test_import_of_a_pipe_path_in_python_imports_its_lines(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, LINES.encode("utf-8"))
    os.close(write_end)
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    try:
        report = await memory.import_(f"/dev/fd/{read_end}")
        assert len(report.imported) == 2 and report.skipped == []
        assert await memory.count(user_id="u", agent_id="a") == 2
    finally:
        memory.close()
        os.close(read_end)
