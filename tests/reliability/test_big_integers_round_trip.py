"""Issue 14, item 6, pinned: 64-bit integers at the edges survive export -> import unchanged.

The property test in test_storable_values.py draws integers at random; this one always
stores the extremes, in metadata (nested too) and in the episode indexes, on both engines.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from episodex import SyncEpisodicMemory
from episodex.testing import HashEmbedder

EDGES: dict[str, Any] = {
    "max": 2**63 - 1,
    "min": -(2**63),
    "past_float": 2**53 + 1,
    "nested": {"list": [2**63 - 2, -(2**63) + 1, {"deep": 2**62 + 3}]},
}


@pytest.mark.parametrize("backend", ["edge", "memory"])
def test_extreme_integers_round_trip_through_export_and_import(
    backend: str, tmp_path: Path
) -> None:
    def open_() -> SyncEpisodicMemory:
        if backend == "edge":
            return SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
        return SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())

    mem = open_()
    try:
        pid = mem.memorize(
            short_summary="s",
            long_summary="l",
            user_id="u",
            agent_id="a",
            conversation_id="c",
            start_index=2**63 - 2,
            end_index=2**63 - 1,
            metadata=EDGES,
        )
        exported = io.StringIO()
        assert mem.export(exported, user_id="u", agent_id="a") == 1
        assert mem.forget(user_id="u", agent_id="a", everything=True) == 1
        report = mem.import_(io.StringIO(exported.getvalue()))
        assert report.imported == [pid]
        if backend == "edge":
            mem.close()
            mem = open_()
        item = mem.get(pid, user_id="u", agent_id="a")
        assert item["metadata"] == EDGES
        assert type(item["metadata"]["max"]) is int and type(item["metadata"]["past_float"]) is int
        assert (item["start_index"], item["end_index"]) == (2**63 - 2, 2**63 - 1)
    finally:
        mem.close()
