"""Opening an embedded store leaves none of its write-ahead log resident in memory.

Qdrant Edge reads the whole log to replay it at open; the engine then asks the kernel to take
those pages back, and in a quantized store everything opening touched but the int8 copies. At
100k episodes that took the quantized store from 0.64x to 0.40x the raw vectors
(benchmarks/README.md, "Fifth pass").
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc/self/smaps and uses MADV_PAGEOUT"
)


def _resident_kib(folder: Path) -> int:
    """Resident KiB of this process's mappings of files under `folder`, from smaps."""
    prefix = str(folder.resolve())
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            inside = len(head) == 6 and head[5].startswith(prefix)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def _ep(i: int) -> dict[str, Any]:
    text = f"turn {i}: " + "the quarterly report lists every refund we issued " * 4
    return {
        "short_summary": text,
        "long_summary": text * 3,
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": f"c{i % 7}",
    }


@pytest.mark.parametrize("quantize", [False, True])
async def test_an_opened_store_keeps_no_log_pages_and_loses_nothing(
    tmp_path: Path, quantize: bool
) -> None:
    embedder = HashEmbedder()
    path = tmp_path / "store"
    mem = EpisodicMemory(path=path, embedder=embedder, quantize=quantize, splade=False)
    await mem.memorize_many([_ep(i) for i in range(600)])
    mem.close()
    wal = [f for f in path.rglob("*") if f.is_file() and f.parent.name == "wal"]
    assert wal, sorted(str(p) for p in path.rglob("*"))

    mem = EpisodicMemory(path=path, embedder=embedder, quantize=quantize, splade=False)
    # The replay read every log entry (about 1 MiB here); none of it stays resident.
    assert _resident_kib(wal[0].parent) < 256
    if quantize:
        # Nor do the preallocated index pages (several MiB); 600 points are not yet quantized.
        assert _resident_kib(path) < 4096
    assert await mem.count(user_id="u", agent_id="a") == 600
    res = await mem.recall(user_id="u", agent_id="a", query="turn 599 refund")
    assert res["previous_conversations"]
    # The log still takes writes, and they survive the next open.
    await mem.memorize(**_ep(600))
    mem.close()
    mem = EpisodicMemory(path=path, embedder=embedder, quantize=quantize, splade=False)
    assert await mem.count(user_id="u", agent_id="a") == 601
    got = await mem.recall(user_id="u", agent_id="a", query="turn 600", conversation_id="c5")
    assert any(it["short_summary_text"].startswith("turn 600:") for it in got["same_conversation"])
    mem.close()
