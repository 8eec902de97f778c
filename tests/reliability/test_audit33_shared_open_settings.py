"""Opening a store open in this process with settings its collections do not have.

Within a process, every embedded memory on one folder shares the open folder. A store keeps
the quantization its collections were made with: opening it with `quantize=True` is refused
with `ConfigurationError` naming the fix, whether or not the folder is already open here
(shared, the open was taken silently and the memory ran unquantized).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from episodex import ConfigurationError, SyncEpisodicMemory
from episodex.testing import HashEmbedder


def _folder_free(folder: Path) -> bool:
    """Whether nothing holds the store folder's lock (a new descriptor's flock is refused
    while any open handle of this process holds it)."""
    fd = os.open(folder / ".episodex.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _memorize(memory: SyncEpisodicMemory, n: int) -> None:
    memory.memorize(
        short_summary=f"refund {n}",
        long_summary=f"the user asked for refund {n}",
        user_id="u",
        agent_id="a",
        conversation_id="c",
    )


def test_quantize_on_a_store_open_in_this_process_is_refused_as_on_a_fresh_open(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "store"
    first = SyncEpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
    try:
        _memorize(first, 1)
        # The same refusal a fresh open of this unquantized store gives, not a silent share.
        with pytest.raises(ConfigurationError, match="without quantize=True"):
            SyncEpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False, quantize=True)
        # The refused open closed its handle: the first memory works and the folder still
        # closes with it.
        _memorize(first, 2)
        assert first.count(user_id="u", agent_id="a") == 2
    finally:
        first.close()
    assert _folder_free(folder)  # the refused open kept no handle on the folder
    with pytest.raises(ConfigurationError, match="without quantize=True"):
        SyncEpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False, quantize=True)
    again = SyncEpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
    try:
        assert again.count(user_id="u", agent_id="a") == 2
    finally:
        again.close()
    assert _folder_free(folder)


def test_a_quantized_store_open_in_this_process_opens_without_quantize(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    first = SyncEpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False, quantize=True)
    try:
        second = SyncEpisodicMemory(path=folder, embedder=HashEmbedder(), splade=False)
        second.close()
        _memorize(first, 1)
        assert first.count(user_id="u", agent_id="a") == 1
    finally:
        first.close()
    assert _folder_free(folder)
