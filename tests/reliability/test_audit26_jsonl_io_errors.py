"""A JSONL task store that cannot write or read its file raises a typed error, file unchanged.

An append that failed part way (a full disk, a file size limit) took its partial line back, so
the file stayed whole, but then raised the raw `OSError`, outside episodex's error tree, so a
caller catching `EpisodexError` (the adapters' "a memory failure never loses the answer") let
it through. Opening a store whose file could not be read (a folder in its place) raised a raw
`IsADirectoryError` as well.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from episodex import ConfigurationError, JSONLTaskStore

# In a child process: the file size limit applies to every file the process writes.
_FULL_DISK = textwrap.dedent(
    """
    import asyncio, json, resource, signal, sys
    from episodex import Episode, JSONLTaskStore, Task

    async def main() -> None:
        store = JSONLTaskStore(sys.argv[1])
        for i in range(3):
            await store.write(Episode(id_=f"e{i}", task=Task(instruction=f"task {i}")))
        before = store.path.read_bytes()
        # Over the limit a write fails with EFBIG, as it fails with ENOSPC on a full disk:
        # the first 100 bytes of the line are written, the rest refused.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 100, hard))
        try:
            await store.write(Episode(id_="big", task=Task(instruction="word " * 5000)))
            outcome = ["stored"]
        except BaseException as exc:
            outcome = [cls.__name__ for cls in type(exc).__mro__]
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        unchanged = store.path.read_bytes() == before
        count = await store.count()
        await store.write(Episode(id_="e3", task=Task(instruction="task 3")))
        store.close()
        reopened = JSONLTaskStore(sys.argv[1])
        print(json.dumps({
            "outcome": outcome,
            "unchanged": unchanged,
            "count": count,
            "reopened": await reopened.count(),
            "torn": len(reopened.torn_lines),
        }))

    asyncio.run(main())
    """
)


def test_a_failed_append_raises_storage_full_and_leaves_the_file_whole(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "StorageFullError" in result["outcome"] and "EpisodexError" in result["outcome"]
    assert result["unchanged"] is True and result["count"] == 3
    assert (result["reopened"], result["torn"]) == (4, 0)


def test_a_store_file_that_cannot_be_read_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "episodes.jsonl").mkdir()
    with pytest.raises(ConfigurationError, match=r"episodes\.jsonl"):
        JSONLTaskStore(tmp_path)
    # The refused store let its lock go: once the folder is moved away, it opens.
    (tmp_path / "episodes.jsonl").rmdir()
    with JSONLTaskStore(tmp_path) as store:
        assert store.torn_lines == []
