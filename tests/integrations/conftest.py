"""Shared by both adapters' tests: a memory on the real in-RAM engine that fails on demand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from episodex import EpisodicMemory, open_engine
from episodex.testing import FailingEngine, HashEmbedder


@pytest.fixture
def failing() -> Iterator[tuple[EpisodicMemory, FailingEngine]]:
    """A memory and its engine; set the engine's `reads` or `writes` to make them fail."""
    engine = FailingEngine(open_engine(location=":memory:"))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        yield memory, engine
    finally:
        memory.close()
        engine.close()  # the memory does not close an engine it was given
