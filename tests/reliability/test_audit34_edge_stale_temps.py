"""Opening the embedded store deletes the temp files of rewrites a killed process left.

A process killed while it rewrote a collection's manifest or the folder map (an atomic write:
temp file, then rename) left the temp file, which nothing deleted. Opening the store now
deletes such files of its own naming: it holds the store's lock, so no other writer is
mid-rewrite. The JSONL task store does the same for its compaction's temp file.
"""

from __future__ import annotations

import json
from pathlib import Path

from episodex import EpisodicMemory, JSONLTaskStore
from episodex.testing import HashEmbedder


def _leave_killed_rewrites(folder: Path) -> list[Path]:
    """The temp files `atomic_write` leaves when its process is killed before the rename."""
    leftovers = [
        folder / ".episodex-collections.json.k1ll3d0a.tmp",
        folder / "episodes" / ".episodex.json.k1ll3d0b.tmp",
    ]
    for path in leftovers:
        path.write_text('{"half": ', encoding="utf-8")
    return leftovers


def test_opening_the_store_deletes_the_temp_files_of_killed_rewrites(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    memory = EpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
    memory.close()
    leftovers = _leave_killed_rewrites(folder)
    # Files that are not its own rewrites' are left alone.
    others = [folder / ".episodex-collections.json.tmp", folder / "notes.tmp"]
    for path in others:
        path.write_text("mine", encoding="utf-8")
    memory = EpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
    try:
        assert [p for p in leftovers if p.exists()] == []
        assert all(p.read_text(encoding="utf-8") == "mine" for p in others)
        assert json.loads((folder / "episodes" / "episodex.json").read_text(encoding="utf-8"))
    finally:
        memory.close()


def test_a_second_open_in_the_process_leaves_the_temp_files_alone(tmp_path: Path) -> None:
    # While the store is open in this process a rewrite may be under way in another thread:
    # only the open that takes the folder's lock tidies.
    folder = tmp_path / "store"
    memory = EpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
    try:
        leftovers = _leave_killed_rewrites(folder)
        second = EpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
        second.close()
        assert all(p.exists() for p in leftovers)
    finally:
        memory.close()


def test_opening_a_jsonl_task_store_deletes_its_killed_compactions_temp_file(
    tmp_path: Path,
) -> None:
    JSONLTaskStore(tmp_path).close()
    # A compaction's temp file holds a whole copy of the store.
    leftover = tmp_path / ".episodes.jsonl.k1ll3d0c.tmp"
    leftover.write_text('{"op": "write"', encoding="utf-8")
    another = tmp_path / ".other.jsonl.k1ll3d0d.tmp"  # another file's: its own store's to tidy
    another.write_text("theirs", encoding="utf-8")
    store = JSONLTaskStore(tmp_path)
    try:
        assert not leftover.exists()
        assert another.read_text(encoding="utf-8") == "theirs"
    finally:
        store.close()
