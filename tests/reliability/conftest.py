"""Backends for the reliability tests: Qdrant Edge, qdrant-client `:memory:`, a live server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory, StepLessonMemory, default_embedder
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory, tmpfs


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of one backend: `edge`, `memory` or `server`."""
    return request.param


@pytest.fixture
def memory(backend: str, tmp_path: Path) -> Iterator[EpisodicMemory]:
    """A fresh, empty memory with the real bundled embedder on each backend."""
    with open_memory(backend, tmp_path, embedder=default_embedder()) as mem:
        yield mem


@pytest.fixture
def lessons() -> Iterator[StepLessonMemory]:
    """A step-lesson memory in qdrant-client's `:memory:` mode, with the test embedder."""
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield StepLessonMemory.from_memory(memory)
    memory.close()


@pytest.fixture
def spill_disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of its own, so the test can turn it read-only (we run as root)."""
    with tmpfs(tmp_path / "disk", "4m", "READ-ONLY SPILL TEST") as disk:
        yield disk
