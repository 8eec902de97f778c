"""Weights that leave a recall no stream are refused by the one check, before any call.

Each weight alone was checked when an adapter was built, not the combination: every stream at 0
(or a SPLADE weight for a store without SPLADE) was accepted, and then every recall raised.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    EpisodicMemory,
    SyncEpisodicMemory,
    ValidationError,
    validate_recall_options,
)
from episodex.testing import HashEmbedder

OFF = {
    "short_weight": 0.0,
    "long_weight": 0.0,
    "bm25_weight": 0,
    "splade_weight": 0.0,
    "splade_short_weight": 0.0,
}


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    """A store opened without the SPLADE streams."""
    memory = EpisodicMemory(path=tmp_path / "plain", embedder=HashEmbedder(), splade=False)
    yield memory
    await memory.aclose()


@pytest.fixture
async def learned(tmp_path: Path) -> AsyncIterator[EpisodicMemory]:
    """A store with the SPLADE streams."""
    memory = EpisodicMemory(path=tmp_path / "learned", embedder=HashEmbedder())
    yield memory
    await memory.aclose()


def test_every_stream_at_zero_is_refused_without_a_memory() -> None:
    with pytest.raises(ConfigurationError, match=r"^Owner: short_weight, .* are all 0"):
        validate_recall_options(OFF, owner="Owner")
    # The SPLADE weights left at their defaults may be what a store runs: not known here.
    assert validate_recall_options({"short_weight": 0, "long_weight": 0, "bm25_weight": 0})


async def test_weights_are_checked_against_the_memorys_store(
    plain: EpisodicMemory, learned: EpisodicMemory
) -> None:
    dense_off = {"short_weight": 0, "long_weight": 0, "bm25_weight": 0}
    with pytest.raises(
        ConfigurationError, match="short_weight, long_weight, bm25_weight are all 0"
    ):
        validate_recall_options(dense_off, memory=plain)
    with pytest.raises(ConfigurationError, match="splade_weight is above 0 but this store has no"):
        validate_recall_options({"splade_weight": 0.5}, memory=plain)
    twin = SyncEpisodicMemory(memory=plain)
    with pytest.raises(ConfigurationError, match="splade_short_weight is above 0"):
        validate_recall_options({"splade_short_weight": 0.5}, memory=twin)
    twin.close()
    assert validate_recall_options(dense_off, memory=learned) == dense_off
    assert validate_recall_options({"splade_weight": 0.5}, memory=learned)
    # The store's SPLADE weights at 0 with SPLADE absent: nothing to refuse.
    assert validate_recall_options({"splade_weight": 0}, memory=plain)


async def test_recall_refuses_by_the_same_rule(
    plain: EpisodicMemory, learned: EpisodicMemory
) -> None:
    cases: list[tuple[EpisodicMemory, dict[str, Any]]] = [
        (learned, OFF),
        (plain, {"short_weight": 0, "long_weight": 0, "bm25_weight": 0}),
        (plain, {"splade_weight": 0.5}),
    ]
    for memory, options in cases:
        with pytest.raises(ConfigurationError) as built:
            validate_recall_options(options, memory=memory)
        with pytest.raises(ValidationError) as called:
            await memory.recall(user_id="u", agent_id="a", query="hotels in Rome", **options)
        assert str(called.value) == str(built.value)
    found = await learned.recall(
        user_id="u", agent_id="a", query="hotels", short_weight=0, long_weight=0, bm25_weight=0
    )
    assert found == {
        "same_conversation": [],
        "previous_conversations": [],
    }
