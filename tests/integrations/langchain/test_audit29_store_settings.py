"""`EpisodexStore` refuses, when it is made, the settings every later operation would refuse.

An `agent_id` or `user_id` longer than the store's id rule allows, or a search weight that is
not a number >= 0, was taken by the constructor; then every put, get, search and listing (or
every query search) failed with `ValidationError`, so a graph given the store failed on its
first memory operation rather than where it was configured.
"""

from __future__ import annotations

import pytest
from episodex import ConfigurationError, EpisodicMemory
from langchain_episodex import EpisodexStore


@pytest.mark.parametrize(
    "settings",
    [
        {"agent_id": "a" * 600},
        {"user_id": "u" * 600},
        {"dense_weight": "high"},
        {"bm25_weight": -1.0},
        {"dense_weight": float("nan")},
        {"bm25_weight": True},
    ],
)
def test_settings_no_operation_could_use_are_refused_when_the_store_is_made(
    memory: EpisodicMemory, settings: dict[str, object]
) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(settings))):
        EpisodexStore(memory, **settings)  # pyright: ignore[reportArgumentType]


def test_settings_at_their_limits_are_taken(memory: EpisodicMemory) -> None:
    store = EpisodexStore(memory, agent_id="a" * 512, dense_weight=0, bm25_weight=2.5)
    store.put(("alice", "notes"), "k", {"text": "Alice likes tea."})
    assert [hit.key for hit in store.search(("alice",), query="tea")] == ["k"]
