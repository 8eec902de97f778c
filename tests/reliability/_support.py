"""Shared pieces of the reliability tests: store snapshots, backends."""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.plan import Filter

QDRANT_URL = os.environ.get("QDRANT_URL")
QDRANT_API_KEY = os.environ.get("QDRANT_API_KEY")
COLLECTION = "episodes"

# The server runs only when QDRANT_URL is set; it needs real sockets.
BACKENDS: list[Any] = ["edge", "memory"]
if QDRANT_URL:
    BACKENDS.append(pytest.param("server", marks=[pytest.mark.server, pytest.mark.enable_socket]))


def server_prefix() -> str:
    """A collection prefix no other test run uses, for tests against a live server."""
    return f"episodex_rel_{uuid.uuid4().hex[:12]}_"


def drop_server_collections(memory: EpisodicMemory) -> None:
    """Delete every collection this (server) memory created."""
    client = memory.engine.client  # type: ignore[attr-defined]
    prefix = memory.engine._prefix  # type: ignore[attr-defined]
    for c in client.get_collections().collections:
        if c.name.startswith(prefix):
            client.delete_collection(c.name)


@contextmanager
def open_memory(backend: str, tmp_path: Any, **kwargs: Any) -> Iterator[EpisodicMemory]:
    """A fresh, empty memory on `backend` (edge, memory or server), closed afterwards."""
    if backend == "edge":
        mem = EpisodicMemory(tmp_path / f"store-{uuid.uuid4().hex[:8]}", **kwargs)
    elif backend == "memory":
        mem = EpisodicMemory(location=":memory:", **kwargs)
    else:
        assert QDRANT_URL, "server backend without QDRANT_URL"
        mem = EpisodicMemory(
            url=QDRANT_URL, api_key=QDRANT_API_KEY, collection_prefix=server_prefix(), **kwargs
        )
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
