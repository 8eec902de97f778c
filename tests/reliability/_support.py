"""Shared pieces of the reliability tests: memories on each registered backend, snapshots."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conformance.backends import (
    BACKENDS,
    QDRANT_API_KEY,
    QDRANT_URL,
    engine_options,
    server_prefix,
)
from conformance.backends import drop_server_collections as drop_engine_collections
from episodex import EpisodicMemory
from episodex.plan import Filter

# The backend registry is re-exported: the reliability tests take their backends from here.
__all__ = [
    "BACKENDS",
    "COLLECTION",
    "QDRANT_API_KEY",
    "QDRANT_URL",
    "drop_server_collections",
    "open_memory",
    "parse_export",
    "remount",
    "server_prefix",
    "snapshot",
    "total_points",
]

COLLECTION = "episodes"


def drop_server_collections(memory: EpisodicMemory) -> None:
    """Delete every collection this (server) memory created."""
    drop_engine_collections(memory.engine)


@contextmanager
def open_memory(backend: str, tmp_path: Any, **kwargs: Any) -> Generator[EpisodicMemory]:
    """A fresh, empty memory on `backend` (edge, memory or server), closed afterwards."""
    path, options = engine_options(backend, Path(tmp_path))
    mem = EpisodicMemory(path, **options, **kwargs)
    try:
        yield mem
    finally:
        if backend == "server":
            drop_server_collections(mem)
        mem.close()


def total_points(memory: EpisodicMemory) -> int:
    """Every episode in the store, across all users and agents."""
    return memory.engine.count(COLLECTION, Filter())


def snapshot(memory: EpisodicMemory) -> list[dict[str, Any]]:
    """Every stored episode (all tenants) as export records, sorted by id: compare before/after."""
    out: list[dict[str, Any]] = []
    offset: str | None = None
    while True:
        hits, offset = memory.engine.scroll(COLLECTION, Filter(), limit=256, offset=offset)
        for h in hits:
            out.append({"id": h.id, **h.payload})
        if offset is None:
            break
    return sorted(out, key=lambda r: r["id"])


def parse_export(text: str) -> list[dict[str, Any]]:
    """The records of a JSONL export."""
    return [json.loads(line) for line in io.StringIO(text) if line.strip()]


def remount(disk: Path, mode: str) -> None:
    """Remount the tmpfs of the `spill_disk` fixture `ro` or `rw`."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(disk)], check=True)
