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
from episodex._engines import edge
from episodex._engines.residency import read_ahead
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


@pytest.mark.parametrize("quantize", [False, True])
async def test_opening_reads_ahead_the_log_and_a_quantized_stores_int8_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quantize: bool
) -> None:
    path = tmp_path / "store"
    await _store(path, quantize=quantize)
    wal = sorted(p for p in path.rglob("*") if p.is_file() and p.parent.name == "wal")
    int8 = sorted(path.rglob("quantized.data"))
    assert wal
    assert bool(int8) is quantize

    advised: list[Path] = []

    def spy(folder: Path, **kwargs: Any) -> list[Path]:
        files = read_ahead(folder, **kwargs)
        advised.extend(files)
        return files

    monkeypatch.setattr(edge, "read_ahead", spy)
    mem = EpisodicMemory(path=path, embedder=_embedder(), quantize=quantize, splade=False)
    try:
        assert sorted(advised) == sorted(wal + int8)
        got = await mem.recall(user_id="u", agent_id="a", query="refund for order 7")
        assert len(got["previous_conversations"]) == 10
        assert await mem.count(user_id="u", agent_id="a") == _size(quantize)
    finally:
        mem.close()


def test_read_ahead_advises_only_the_named_files_and_skips_what_it_cannot_open(
    tmp_path: Path,
) -> None:
    (tmp_path / "wal").mkdir()
    (tmp_path / "seg" / "vec").mkdir(parents=True)
    log = tmp_path / "wal" / "open-1"
    int8 = tmp_path / "seg" / "vec" / "quantized.data"
    other = tmp_path / "seg" / "vec" / "matrix.dat"
    for f in (log, int8, other):
        f.write_bytes(b"\0" * 8192)
    dangling = tmp_path / "wal" / "gone"
    dangling.symlink_to(tmp_path / "missing")

    advised = read_ahead(tmp_path, names=("quantized.data",), subfolders=("wal",))

    assert sorted(advised) == sorted([log, int8])
    assert read_ahead(tmp_path) == []
    assert other.read_bytes() == b"\0" * 8192
