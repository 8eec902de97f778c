"""The issue-17 peers harness runs end to end on a tiny store with the peers the dev group has.

mem0, Chroma, LanceDB and LangGraph are in the `peers` dependency group, installed only by
`python3 dev.py bench`; this test runs episodex, LlamaIndex and langchain-qdrant.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

# Slow: runs the harness; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _harness(name: str) -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


def test_peers_harness_times_and_reports_each_peer(tmp_path: Path) -> None:
    peers = _harness("peers")
    out = tmp_path / "results"
    res = peers.main(
        [
            "--sizes",
            "40",
            "--peers",
            "episodex,llamaindex,qdrant",
            "--queries",
            "2",
            "--warmup",
            "0",
            "--pool",
            "8",
            "--no-quality",
            "--cache",
            str(tmp_path / "cache"),
            "--work",
            str(tmp_path / "work"),
            "--out",
            str(out),
        ]
    )
    rows = res["sizes"]["40"]
    assert set(rows) == {"episodex", "llamaindex", "qdrant"}
    for key, row in rows.items():
        assert "error" not in row, (key, row)
        for mode in ("e2e", "known"):
            assert row["latency"][mode]["n"] == 2 and row["latency"][mode]["p50_ms"] > 0
        assert row["write_dps"] > 0
    assert rows["episodex"]["open_s"] > 0 and rows["episodex"]["disk_mib"] > 0
    report = (out / "peers.md").read_text()
    assert "## Speed" in report and "LlamaIndex VectorMemoryBlock" in report


def test_peers_harness_scores_one_question_by_hand() -> None:
    peers = _harness("peers")
    assert peers.score(["D1:3", "D2:1", "D1:5", "D3:1", "D3:2", "D4:1"], ["D4:1"]) == (0.0, 1.0)
    assert peers.score(["D4:1"], ["D4:1", "D5:2"]) == (1.0, 1.0)
    assert peers.score([], ["D4:1"]) == (0.0, 0.0)
