"""An export (and every file written whole) goes where its path leads.

The export wrote a temp file beside the path and renamed it over the path. Over a named pipe
(`mkfifo`; `-o /dev/stdout`) the pipe was replaced by a regular file and its reader got
nothing, and a shell's process substitution (`-o >(gzip > x.gz)`, a /dev/fd path) was refused;
over a symlink the link became a copy of its own and the file it names kept its old text. The
task store's compaction did the same to a store file that is a link. A pipe or a device is now
written into, and a symlink's target is replaced, the link kept.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from episodex import Episode, JSONLTaskStore, Task
from episodex.cli import main

IDS = ["--user", "u", "--agent", "a"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    for n in (1, 2):
        add = ["add", *IDS, "--conversation", "c", "--short", f"s{n}", "--long", f"l{n}"]
        assert main(["--path", str(store), *add]) == 0
    return store


def _export(
    store: Path, output: str, pass_fds: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "episodex", "--path", str(store), "export", *IDS, "-o", output],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
        pass_fds=pass_fds,
    )


def _summaries(text: str) -> list[str]:
    return sorted(json.loads(line)["short_summary"] for line in text.splitlines())


def test_an_export_into_a_named_pipe_reaches_its_reader(store: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # Opened for reading first, without waiting for a writer: the export's open then finds
    # its reader, and what it wrote is read here once it ended.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = _export(store, str(fifo))
        got = b""
        while chunk := os.read(reader, 1 << 16):
            got += chunk
    finally:
        os.close(reader)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert _summaries(got.decode("utf-8")) == ["s1", "s2"]


def test_an_export_into_a_dev_fd_path_is_written(store: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        done = _export(store, f"/dev/fd/{write_end}", pass_fds=(write_end,))
        os.close(write_end)
        got = b""
        while chunk := os.read(read_end, 1 << 16):
            got += chunk
    finally:
        os.close(read_end)
    assert done.returncode == 0, done.stderr
    assert _summaries(got.decode("utf-8")) == ["s1", "s2"]


def test_an_export_to_a_symlink_replaces_its_target_and_keeps_the_link(
    store: Path, tmp_path: Path
) -> None:
    target = tmp_path / "exports" / "episodes.jsonl"
    target.parent.mkdir()
    target.write_text("an older export\n", encoding="utf-8")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    done = _export(store, str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert _summaries(target.read_text(encoding="utf-8")) == ["s1", "s2"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["episodes.jsonl"]


def test_an_export_to_a_regular_file_still_replaces_it(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n", encoding="utf-8")
    done = _export(store, str(out))
    assert done.returncode == 0, done.stderr
    assert not out.is_symlink()
    assert _summaries(out.read_text(encoding="utf-8")) == ["s1", "s2"]


async def test_a_task_store_compaction_keeps_a_store_file_that_is_a_link(tmp_path: Path) -> None:
    kept = tmp_path / "kept" / "episodes.jsonl"
    kept.parent.mkdir()
    kept.touch()
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "episodes.jsonl").symlink_to(kept)
    store = JSONLTaskStore(folder)
    try:
        for n in range(3):
            await store.write(Episode(id_=f"e{n}", task=Task(instruction=f"task {n}")))
        await store.delete("e1")
        await store.compact()
    finally:
        store.close()
    assert (folder / "episodes.jsonl").is_symlink()
    reopened = JSONLTaskStore(kept.parent)
    try:
        assert sorted(e.id_ for e in await reopened.read_recent(10)) == ["e0", "e2"]
    finally:
        reopened.close()
