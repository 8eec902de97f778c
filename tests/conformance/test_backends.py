"""Run the conformance suite on every backend: Qdrant Edge, qdrant-client `:memory:`, and a
live Qdrant server when `QDRANT_URL` is set (the server class only exists then)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
from episodex import EpisodicMemory

from .episode_store import EpisodeStoreConformance


class TestQdrantEdge(EpisodeStoreConformance):
    @pytest.fixture
    async def memory(self, tmp_path, embedder) -> AsyncIterator[EpisodicMemory]:
        mem = EpisodicMemory(path=tmp_path / "store", embedder=embedder)
        yield mem
        mem.close()


class TestQdrantClientLocal(EpisodeStoreConformance):
    @pytest.fixture
    async def memory(self, embedder) -> AsyncIterator[EpisodicMemory]:
        mem = EpisodicMemory(location=":memory:", embedder=embedder)
        yield mem
        mem.close()


if os.environ.get("QDRANT_URL"):

    @pytest.mark.server
    @pytest.mark.enable_socket
    class TestQdrantServer(EpisodeStoreConformance):
        @pytest.fixture
        async def memory(self, embedder) -> AsyncIterator[EpisodicMemory]:
            prefix = f"episodex_test_{uuid.uuid4().hex[:8]}_"
            mem = EpisodicMemory(
                url=os.environ["QDRANT_URL"],
                api_key=os.environ.get("QDRANT_API_KEY"),
                collection_prefix=prefix,
                embedder=embedder,
            )
            yield mem
            mem.engine.client.delete_collection(f"{prefix}episodes")  # type: ignore[attr-defined]
            mem.close()
