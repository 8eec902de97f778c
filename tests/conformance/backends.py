"""The one registry of engine backends every backend-parametrised test runs on.

Qdrant Edge (embedded folder) and qdrant-client `:memory:` always run; a live Qdrant server
runs too when `QDRANT_URL` is set (it needs real sockets, so it is marked `server` and
`enable_socket`). Tests take `BACKENDS` as parameters and turn a name into engine options with
`engine_options`, so adding a backend means adding it here once.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from episodex import Engine, EngineOptions, open_engine
from episodex.plan import CollectionSpec, Point

__all__ = [
    "BACKENDS",
    "QDRANT_API_KEY",
    "QDRANT_URL",
    "drop_server_collections",
    "engine_options",
    "server_prefix",
]

QDRANT_URL = os.environ.get("QDRANT_URL")
QDRANT_API_KEY = os.environ.get("QDRANT_API_KEY")

BACKENDS: list[Any] = ["edge", "memory"]
if QDRANT_URL:
    BACKENDS.append(pytest.param("server", marks=[pytest.mark.server, pytest.mark.enable_socket]))


def server_prefix() -> str:
    """A collection prefix no other test run uses, for tests against a live server."""
    return f"episodex_test_{uuid.uuid4().hex[:12]}_"


def engine_options(backend: str, folder: Path) -> tuple[Path | None, EngineOptions]:
    """`(path, options)` that open a fresh, empty engine on `backend` (edge, memory, server).

    `path` is a new folder under `folder` for the embedded engine, else None.
    """
    if backend == "edge":
        return folder / f"store-{uuid.uuid4().hex[:8]}", {}
    if backend == "memory":
        return None, {"location": ":memory:"}
    if backend == "server" and QDRANT_URL:
        return None, {
            "url": QDRANT_URL,
            "api_key": QDRANT_API_KEY,
            "collection_prefix": server_prefix(),
        }
    raise ValueError(f"unknown backend {backend!r} (or QDRANT_URL is not set)")


def drop_server_collections(engine: Engine) -> None:
    """Delete every collection a server engine created under its prefix (others: nothing)."""
    if engine.kind != "server":
        return
    client = engine.client  # type: ignore[attr-defined]
    prefix = engine._prefix  # type: ignore[attr-defined]
    for c in client.get_collections().collections:
        if c.name.startswith(prefix):
            client.delete_collection(c.name)


@contextmanager
def loaded_engine(
    backend: str, folder: Path, spec: CollectionSpec, points: Sequence[Point]
) -> Generator[Engine]:
    """An engine of `backend` holding `points` in a new collection of `spec`; closed after."""
    path, options = engine_options(backend, folder)
    engine = open_engine(path=str(path) if path else None, **options)
    try:
        engine.ensure_collection(spec)
        engine.upsert(spec.name, list(points))
        yield engine
    finally:
        drop_server_collections(engine)
        engine.close()
