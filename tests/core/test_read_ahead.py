"""Opening an embedded store first has the kernel read ahead what the load reads whole.

Qdrant Edge's load replays the write-ahead log and, in a quantized store, reads the int8 copies
of the vectors; from a cold disk it faulted them in page by page. The engine now advises those
files `WILLNEED` just before the load (benchmarks/README.md, "Sixth pass").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder

pytestmark = pytest.mark.skipif(
    not hasattr(os, "posix_fadvise"), reason="posix_fadvise is POSIX-only"
)


def _embedder() -> HashEmbedder:
    return HashEmbedder(dimension=_DIM)


def _ep(i: int) -> dict[str, Any]:
    return {
        "short_summary": f"turn {i}: the refund for order {i} went out on friday",
        "long_summary": f"turn {i}: the customer asked twice about order {i}",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": f"c{i % 5}",
    }


# Qdrant indexes (and so quantizes) a segment once a vector's storage passes 10 MB.
_DIM = 1024


def _size(quantize: bool) -> int:
    return 3000 if quantize else 300


async def _store(path: Path, *, quantize: bool) -> None:
    mem = EpisodicMemory(path=path, embedder=_embedder(), quantize=quantize, splade=False)
    await mem.memorize_many([_ep(i) for i in range(_size(quantize))])
    await mem.optimize()
    mem.close()


def _spy(monkeypatch: pytest.MonkeyPatch, *, fail: bool = False) -> list[Path]:
    """Record the files given `WILLNEED`; with `fail`, refuse every advice as a kernel may."""
    advised: list[Path] = []
    real = os.posix_fadvise

    def advise(fd: int, offset: int, length: int, advice: int) -> None:
        if advice == os.POSIX_FADV_WILLNEED:
            advised.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
            if fail:
                raise OSError(22, "Invalid argument")
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", advise)
    return advised


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="names fds through /proc")
@pytest.mark.parametrize("quantize", [False, True])
async def test_opening_reads_ahead_the_log_and_a_quantized_stores_int8_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quantize: bool
) -> None:
    path = tmp_path / "store"
    await _store(path, quantize=quantize)
    wal = sorted(p.resolve() for p in path.rglob("*") if p.is_file() and p.parent.name == "wal")
    int8 = sorted(p.resolve() for p in path.rglob("quantized.data"))
    assert wal
    assert bool(int8) is quantize

    advised = _spy(monkeypatch)
    mem = EpisodicMemory(path=path, embedder=_embedder(), quantize=quantize, splade=False)
    try:
        assert sorted(advised) == sorted(wal + int8)
        got = await mem.recall(user_id="u", agent_id="a", query="refund for order 7")
        assert len(got["previous_conversations"]) == 10
        assert await mem.count(user_id="u", agent_id="a") == _size(quantize)
    finally:
        mem.close()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="names fds through /proc")
async def test_a_refused_read_ahead_still_opens_the_store_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    await _store(path, quantize=False)
    advised = _spy(monkeypatch, fail=True)
    mem = EpisodicMemory(path=path, embedder=_embedder(), splade=False)
    try:
        assert advised  # it was asked, and refused
        assert await mem.count(user_id="u", agent_id="a") == _size(False)
        got = await mem.recall(user_id="u", agent_id="a", query="refund for order 7")
        assert got["previous_conversations"][0]["short_summary_text"].startswith("turn 7:")
    finally:
        mem.close()
