"""A forget reaches the staging copy of a stopped re-index on a disk with little room left.

A re-index killed or stopped midway leaves a copy of the collection in its staging folder, and
a forget deletes the user's episodes there too (test_audit32_forget_staging). In a process that
had not opened that copy, the forget loaded it first, and loading fills its memory-mapped files
to their length, so it asked for that much room (about 170 MiB for a copy of six episodes).
On a disk with less room than that above `min_free_bytes` (but plenty for a delete, 1 MiB),
every forget was refused with `StorageFullError`, although the copy holds nothing the live
collection lacks and took the very space the forget asked the user to free. Such a copy is now
deleted whole: the forget goes through, no copy of the user's texts is left, and a later re-index
copies again what the live collection holds. The test uses a tmpfs of its own, so other
writers on the machine do not move its free space.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import SyncEpisodicMemory
from episodex.testing import HashEmbedder

from ._support import tmpfs

MiB = 1024 * 1024
OLD = HashEmbedder(dimension=32, model_id="test/old")
NEW = HashEmbedder(dimension=48, model_id="test/new")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "1g", "FORGET STAGED COPY FREE-SPACE TEST") as mounted:
        yield mounted


class _Stop(Exception):
    pass


def _stop_before_the_switch(done: int, total: int) -> None:
    if done == total:
        raise _Stop


def _episodes(user: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{user} secret {i}",
            "long_summary": f"{user} told the agent secret number {i}",
            "user_id": user,
            "agent_id": "a",
            "conversation_id": f"c{i}",
        }
        for i in range(n)
    ]


def _holding(path: Path, text: str) -> list[str]:
    """The files under `path` whose bytes hold `text`."""
    return [
        str(f.relative_to(path))
        for f in path.rglob("*")
        if f.is_file() and text.encode() in f.read_bytes()
    ]


def test_a_forget_on_a_nearly_full_disk_reaches_a_stopped_reindexs_copy(disk: Path) -> None:
    path = disk / "store"
    with SyncEpisodicMemory(path, embedder=OLD, splade=False, min_free_bytes=0) as mem:
        ids = mem.memorize_many([*_episodes("u", 3), *_episodes("v", 3)])
        with pytest.raises(_Stop):
            mem.reindex(NEW, on_progress=_stop_before_the_switch)
    [copy] = [p for p in path.iterdir() if p.name.startswith("episodes_reindex_")]
    assert _holding(copy, "u secret 1")
    # The live collection opened (its files filled) by a first handle; a second one keeps
    # all but 8 MiB of what is free now: room for a delete, not for loading the copy.
    opened = SyncEpisodicMemory(path, embedder=OLD, splade=False, min_free_bytes=0)
    try:
        tight = shutil.disk_usage(disk).free - 8 * MiB
        with SyncEpisodicMemory(path, embedder=OLD, splade=False, min_free_bytes=tight) as mem:
            assert mem.forget(user_id="u", agent_id="a", point_id=ids[1]) == 1
            assert mem.forget(user_id="v", agent_id="a", conversation_id="c2") == 1
            assert mem.count(user_id="u", agent_id="a") == 2
            assert mem.count(user_id="v", agent_id="a") == 2
    finally:
        opened.close()
    # The copy is gone whole (with the texts it held); a re-index with room makes a new one from the live collection.
    assert not copy.exists()
    with SyncEpisodicMemory(path, embedder=NEW, splade=False, for_reindex=True) as mem:
        report = mem.reindex()
        assert (report.episodes, report.embedded, report.resumed) == (4, 4, 0)
        assert mem.count(user_id="u", agent_id="a") == 2
        assert mem.get(ids[0], user_id="u", agent_id="a")["short_summary_text"] == "u secret 0"
    left = sorted(p.name for p in path.iterdir() if not p.name.startswith("."))
    assert len(left) == 2 and left[1] == "episodex-collections.json"
    assert left[0].startswith("episodes_reindex_")  # the new copy, serving now


def test_a_copy_whose_dropping_a_kill_cut_short_is_deleted_when_the_store_opens(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    with SyncEpisodicMemory(path, embedder=OLD, splade=False) as mem:
        mem.memorize_many(_episodes("u", 2))
        with pytest.raises(_Stop):
            mem.reindex(NEW, on_progress=_stop_before_the_switch)
    [copy] = [p for p in path.iterdir() if p.name.startswith("episodes_reindex_")]
    # Where a forget renames a copy before deleting it: killed in between, this is left.
    copy.rename(path / f".dropped-{copy.name}")
    with SyncEpisodicMemory(path, embedder=OLD, splade=False) as mem:
        assert mem.count(user_id="u", agent_id="a") == 2
    assert sorted(p.name for p in path.iterdir() if p.is_dir()) == ["episodes"]
