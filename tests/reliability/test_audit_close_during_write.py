"""Closing a memory while a write whose caller gave up is still running: all or nothing.

A blocking write cannot be stopped halfway, so a caller that is cancelled (Ctrl-C in
`episodex import`, a timeout around `async with EpisodicMemory(...)`) leaves it running in its
thread. The caller's `finally` then closes the memory. `close()` used to close the engine
under the running write: the next batch failed, taking the earlier batches back failed too
(the store was closed), and an import of 5,000 episodes left its first few hundred stored,
said only in a log line. Importing the file again then stored those episodes twice.

Now `close()` waits for a write under way (the store's write lock) before closing the engine,
so the write ends stored, or taken back whole, as it would have without the close.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from episodex import EngineError, EpisodicMemory, open_engine
from episodex.cli import main
from episodex.plan import Filter
from episodex.testing import HashEmbedder

USER, AGENT = "u", "a"
N = 5000


def _import_file() -> str:
    return "".join(
        json.dumps(
            {
                "user_id": USER,
                "agent_id": AGENT,
                "conversation_id": f"c{i % 7}",
                "short_summary": f"short {i}",
                "long_summary": f"long summary {i}",
            }
        )
        + "\n"
        for i in range(N)
    )


async def test_closing_during_a_cancelled_import_leaves_it_whole(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    mem = EpisodicMemory(folder, embedder=HashEmbedder(), splade=False)
    # A second handle on the same open folder, to watch the writes land.
    watcher = open_engine(path=str(folder))
    try:
        job = asyncio.create_task(mem.import_(io.StringIO(_import_file())))
        # Wait until the first batch is stored, then give up on the import and close, as
        # the CLI's `finally` does after Ctrl-C.
        deadline = time.monotonic() + 120
        while watcher.count("episodes", Filter()) == 0:
            assert time.monotonic() < deadline, "the import never started writing"
            await asyncio.sleep(0.005)
        job.cancel()
        mem.close()
        stored = watcher.count("episodes", Filter())
    finally:
        mem.close()
        watcher.close()
    assert stored == N, f"{stored} of {N} episodes stored: the import was cut in half"
    # Reopened, the store holds the whole import, each episode once.
    async with EpisodicMemory(folder, embedder=HashEmbedder(), splade=False) as again:
        assert await again.count(user_id=USER, agent_id=AGENT) == N


def test_ctrl_c_during_a_cli_import_finishes_it_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = 600  # three engine writes of 256 at most
    source = tmp_path / "many.jsonl"
    source.write_text("".join(_import_file().splitlines(keepends=True)[:n]), encoding="utf-8")
    folder = tmp_path / "store"
    # A handle of this process on the folder the command opens, to see its writes land.
    watcher = open_engine(path=str(folder))
    interrupted = threading.Event()

    def interrupt_once_writing() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if watcher.count("episodes", Filter()) > 0:
                    break
            except EngineError:
                pass  # the command has not opened its collection yet
            time.sleep(0.002)
        interrupted.set()
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C

    thread = threading.Thread(target=interrupt_once_writing)
    thread.start()
    try:
        code = main(["--path", str(folder), "import", str(source)])
        thread.join()
        stored = watcher.count("episodes", Filter())
    finally:
        watcher.close()
    err = capsys.readouterr().err
    assert interrupted.is_set() and code == 130
    assert stored == n, f"{stored} of {n} episodes stored"
    assert "interrupted; waiting for the import under way to end" in err
    assert f"the import was finished before stopping: {n} episode(s) imported" in err
