"""Backends for the reliability tests: Qdrant Edge, qdrant-client `:memory:`, a live server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory, default_embedder

from ._support import BACKENDS, open_memory


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of one backend: `edge`, `memory` or `server`."""
    return request.param


@pytest.fixture
def memory(backend: str, tmp_path: Path) -> Iterator[EpisodicMemory]:
    """A fresh, empty memory with the real bundled embedder on each backend."""
    with open_memory(backend, tmp_path, embedder=default_embedder()) as mem:
        yield mem
