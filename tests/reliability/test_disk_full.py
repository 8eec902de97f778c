"""Issue 14, item 9: a full disk gives `StorageFullError`, never SIGBUS, and the store reopens.

The embedded engine's files are memory-mapped: on a full disk the process used to die with
SIGBUS. The store now keeps `min_free_bytes` free (default 128 MiB) and needs room to open
(loading fills the mapped files to their length). One test uses a real 40 MiB tmpfs as the
store's disk (we run as root); where mounting is not allowed it fails saying so, it does not
pass. The others check the free-space rule on the ordinary test disk with chosen thresholds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, StorageFullError
from episodex.testing import HashEmbedder

from ._support import tmpfs

TESTS = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024


def _batch(n: int, tag: str, *, size: int = 2000) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{tag} {i}",
            "long_summary": "l" * size,
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": tag,
        }
        for i in range(n)
    ]


def test_a_write_that_would_leave_too_little_free_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    free = shutil.disk_usage(tmp_path).free
    # Room to create the collection and write a little, not for a 200 MiB batch.
    mem = EpisodicMemory(path=folder, embedder=HashEmbedder(), min_free_bytes=free - 80 * MiB)
    try:
        mem.store.memorize_many(_batch(20, "small"))
        with pytest.raises(StorageFullError, match="nothing was written"):
            mem.store.memorize_many(_batch(400, "huge", size=100_000))
        assert mem.store.count(user_id="u", agent_id="a") == 20
    finally:
        mem.close()
    # Refused on open when the disk cannot take what loading needs, with the store intact.
    with pytest.raises(StorageFullError, match="opening"):
        EpisodicMemory(path=folder, embedder=HashEmbedder(), min_free_bytes=free + 1024 * MiB)
    again = EpisodicMemory(path=folder, embedder=HashEmbedder())
    try:
        assert again.store.count(user_id="u", agent_id="a") == 20
        assert again.store.count(user_id="u", agent_id="a", conversation_id="huge") == 0
    finally:
        again.close()


def test_min_free_bytes_is_checked(tmp_path: Path) -> None:
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ConfigurationError, match="min_free_bytes"):
            EpisodicMemory(path=tmp_path / "s", embedder=HashEmbedder(), min_free_bytes=bad)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match="embedded store"):
        EpisodicMemory(location=":memory:", embedder=HashEmbedder(), min_free_bytes=0)


_FILL = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from episodex import EpisodicMemory, StorageFullError
    from episodex.testing import HashEmbedder
    try:
        mem = EpisodicMemory(path=sys.argv[1], embedder=HashEmbedder(dimension=384),
                             min_free_bytes=int(sys.argv[3]))
    except StorageFullError as exc:
        print(json.dumps({"open": str(exc)}))
        sys.exit(0)
    written, refused = mem.store.count(user_id="u", agent_id="a"), None
    batch = int(sys.argv[4])
    try:
        while batch:
            mem.store.memorize_many([
                {"short_summary": f"s {written + i}", "long_summary": "l" * 2000,
                 "user_id": "u", "agent_id": "a", "conversation_id": "c"} for i in range(batch)
            ])
            written += batch
    except StorageFullError as exc:
        refused = str(exc)
    mem.close()
    print(json.dumps({"written": written, "refused": refused}))
    """
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "40m", "DISK-FULL TEST") as disk:
        yield disk


def _run(folder: Path, min_free: int, batch: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _FILL, str(folder), str(TESTS), str(min_free), str(batch)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    # -7 would be SIGBUS: the crash this item is about.
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(900)
def test_a_full_40_mib_tmpfs_gives_storage_full_not_sigbus(small_disk: Path) -> None:
    folder = small_disk / "store"
    # The default headroom (128 MiB) does not fit on a 40 MiB disk: refused before creating.
    assert "creating" in _run(folder, 128 * MiB, 0)["open"]
    # With 4 MiB of headroom the store fills the disk until a write is refused.
    filled = _run(folder, 4 * MiB, 100)
    assert filled["written"] > 0 and "nothing was written" in filled["refused"]
    assert shutil.disk_usage(small_disk).free > 0
    # Opening again would fill the mapped files: refused while the disk is this small.
    assert "opening" in _run(folder, 4 * MiB, 0)["open"]
    # Give the disk room and the store opens with every acknowledged write.
    subprocess.run(["mount", "-o", "remount,size=400m", str(small_disk)], check=True)
    again = _run(folder, 4 * MiB, 0)
    assert again == {"written": filled["written"], "refused": None}
