"""Recall weights that leave no stream are refused when a LangChain adapter is made.

They were accepted (each weight alone is a valid number), and then every recall raised: the
retriever's chain failed, the tool answered "Memory could not be searched just now" for good,
the middleware, classic memory and LCEL runnable went on without memory at every turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory
from episodex.testing import HashEmbedder
from langchain_episodex import (
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
    EpisodicRetriever,
    create_memory_search_tool,
    recall_episodes,
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
        memory=m, user_id="u", agent_id="a", recall_options=o
    ),
    "EpisodicRetriever search_kwargs": lambda m, o: EpisodicRetriever(
        memory=m, user_id="u", agent_id="a", search_kwargs=o
    ),
    "EpisodicConversationMemory": lambda m, o: EpisodicConversationMemory(
        memory=m, user_id="u", agent_id="a", recall_options=o
    ),
    "EpisodicMemoryMiddleware": lambda m, o: EpisodicMemoryMiddleware(
        m, agent_id="a", recall_options=o
    ),
    "recall_episodes": lambda m, o: recall_episodes(m, recall_options=o),
    "create_memory_search_tool": lambda m, o: create_memory_search_tool(m, recall_options=o),
}


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    """A store opened without the SPLADE streams."""
    memory = EpisodicMemory(path=tmp_path / "plain", embedder=HashEmbedder(), splade=False)
    yield memory
    await memory.aclose()


@pytest.mark.parametrize("adapter", sorted(BUILDERS))
def test_every_stream_at_zero_is_refused_when_made(adapter: str, memory: EpisodicMemory) -> None:
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


def test_per_call_search_kwargs_keep_the_merged_options_runnable(memory: EpisodicMemory) -> None:
    # recall_options and search_kwargs are merged for each call: checked together.
    with pytest.raises(ConfigurationError, match="are all 0"):
        EpisodicRetriever(
            memory=memory,
            user_id="u",
            agent_id="a",
            recall_options={"short_weight": 0, "long_weight": 0, "bm25_weight": 0},
            search_kwargs={"splade_weight": 0, "splade_short_weight": 0},
        )
