"""A spill file holding episodes that cannot be read is never reported as nothing pending.

A recorder made on the spill file a killed process left (a restart) that cannot read it (its
permissions, a failing disk) cannot write its episodes. `stats()` counted the file's episodes
as it last read them, and a recorder that never read it counted none: `flush()` and `aclose()`
returned 0, "everything stored", while the turns of the killed process waited in the file.
Now a file that cannot be read and is not empty counts as one episode waiting until it can be
read (`last_error` says why), so `flush()` and `aclose()` report that something still waits.

The file is made unreadable by its permissions, read by a child process of another user when
the tests run as root (root reads any file).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import StoreDown, recorder_episode

GUARD = 120  # seconds: only a guard against a child that hangs

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from episodex import EpisodeRecorder, EpisodicMemory
    from episodex.testing import HashEmbedder

    async def main():
        async with EpisodicMemory(
            location=":memory:", embedder=HashEmbedder(), splade=False
        ) as memory:
            recorder = EpisodeRecorder(memory, spill_path=sys.argv[1])
            flushed = await recorder.flush()
            stats = recorder.stats()
            closed = await recorder.aclose()
            print(flushed, stats.pending, stats.spilled, closed, flush=True)
            print(stats.last_error, flush=True)

    asyncio.run(main())
    """
)


@pytest.fixture
def folder() -> Iterator[Path]:
    # Not under pytest's tmp_path, which only its owner may enter: the child's user must.
    made = Path(tempfile.mkdtemp(prefix="episodex-spill-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made)


async def test_a_spill_file_that_cannot_be_read_is_not_reported_empty(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spill = folder / "pending.jsonl"
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        StoreDown.put_in(memory, monkeypatch)
        recorder = EpisodeRecorder(memory, spill_path=spill)
        assert await recorder.record(**recorder_episode(1)) is None
        assert recorder.stats().spilled == 1
    finally:
        memory.close()
    spill.chmod(0o000)
    # As root, the child runs as nobody (util-linux `setpriv`: the interpreter lies in a
    # folder only root may enter, which `subprocess`'s own `user=` cannot exec from).
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    child = subprocess.run(
        [*(as_nobody if os.geteuid() == 0 else []), sys.executable, "-c", _CHILD, str(spill)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    assert child.returncode == 0, child.stderr
    counts, error = child.stdout.splitlines()
    assert counts.split() == ["1", "1", "1", "1"]
    assert "PermissionError" in error
    # Readable again, the episode is there to be written.
    spill.chmod(0o644)
    back = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        assert await EpisodeRecorder(back, spill_path=spill).flush() == 0
        stored = back.store.read_recent(10, user_id="u1", agent_id="support")
        assert [row["short_summary_text"] for row in stored] == ["question 1"]
    finally:
        back.close()
