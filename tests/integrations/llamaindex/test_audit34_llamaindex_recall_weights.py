"""Recall weights that leave no stream are refused when a LlamaIndex adapter is made.

They were accepted (each weight alone is a valid number), and then every `aretrieve` raised
(the query engine lost its answer) and every tool call said memory could not be searched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory
from episodex.testing import HashEmbedder
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    EpisodicRetriever,
    create_memory_search_tool,
)

OFF = {
    "short_weight": 0.0,
    "long_weight": 0.0,
    "bm25_weight": 0.0,
    "splade_weight": 0.0,
    "splade_short_weight": 0.0,
}
DENSE_OFF = {"short_weight": 0.0, "long_weight": 0.0, "bm25_weight": 0.0}

Build = Callable[[Any, dict[str, Any]], object]
BUILDERS: dict[str, Build] = {
    "EpisodicRetriever": lambda m, o: EpisodicRetriever(
        m, user_id="u", agent_id="a", recall_options=o
    ),
    "create_memory_search_tool": lambda m, o: create_memory_search_tool(
        m, user_id="u", agent_id="a", recall_options=o
    ),
    "EpisodicMemoryBlock": lambda m, o: EpisodicMemoryBlock(
        memory=m, user_id="u", agent_id="a", recall_options=o
    ),
}


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    """A store opened without the SPLADE streams."""
    memory = EpisodicMemory(path=tmp_path / "plain", embedder=HashEmbedder(), splade=False)
    yield memory
    await memory.aclose()


@pytest.mark.parametrize("adapter", sorted(BUILDERS))
async def test_every_stream_at_zero_is_refused_when_made(
    adapter: str, memory: EpisodicMemory
) -> None:
    with pytest.raises(ConfigurationError, match="are all 0: give at least one a weight > 0"):
        BUILDERS[adapter](memory, OFF)
    # The SPLADE streams of this store are still weighted: a working recall, accepted.
    assert BUILDERS[adapter](memory, DENSE_OFF) is not None


@pytest.mark.parametrize("adapter", sorted(BUILDERS))
async def test_weights_the_store_cannot_run_are_refused_when_made(
    adapter: str, plain: EpisodicMemory
) -> None:
    with pytest.raises(ConfigurationError, match="splade_weight is above 0 but this store has no"):
        BUILDERS[adapter](plain, {"splade_weight": 0.4})
    with pytest.raises(ConfigurationError, match="short_weight, long_weight, bm25_weight are all"):
        BUILDERS[adapter](SyncEpisodicMemory(memory=plain), DENSE_OFF)
    assert BUILDERS[adapter](plain, {"bm25_weight": 1.0, "splade_weight": 0}) is not None
