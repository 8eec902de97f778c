"""Run the episode-store conformance suite on every registered backend: Qdrant Edge,
qdrant-client `:memory:`, and a live Qdrant server when `QDRANT_URL` is set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from episodex import Embedder, EpisodicMemory

from .backends import BACKENDS, drop_server_collections, engine_options
from .episode_store import EpisodeStoreConformance


class TestEpisodeStore(EpisodeStoreConformance):
    @pytest.fixture(params=BACKENDS)
    async def memory(
        self, request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
    ) -> AsyncIterator[EpisodicMemory]:
        path, options = engine_options(request.param, tmp_path)
        mem = EpisodicMemory(path, embedder=embedder, **options)
        yield mem
        drop_server_collections(mem.engine)
        mem.close()
