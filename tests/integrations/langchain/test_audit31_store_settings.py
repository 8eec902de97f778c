"""`EpisodexStore` refuses, when it is made, two more settings every later operation refused.

- `dense_weight=0` with `bm25_weight=0` was taken; then every `search(query=...)` (the store's
  reason to be in an agent: a tool or node looking up what it knows) raised `ValidationError`,
  in the middle of a graph run rather than where the store was configured.
- A `user_position` past the deepest namespace the store keeps (16 labels) was taken when no
  `user_id` fixes the user; then every put, get, search and listing raised `ValidationError`
  (a namespace long enough to hold the user is too long to store).
"""

from __future__ import annotations

import pytest
from episodex import ConfigurationError, EpisodicMemory
from langchain_episodex import EpisodexStore


def test_weights_that_leave_a_query_nothing_to_rank_by_are_refused(
    memory: EpisodicMemory,
) -> None:
    with pytest.raises(ConfigurationError, match="dense_weight and bm25_weight"):
        EpisodexStore(memory, dense_weight=0, bm25_weight=0.0)
    # One weight at 0 is a store that ranks by the other.
    store = EpisodexStore(memory, agent_id="audit31-weights", dense_weight=0)
    store.put(("alice", "notes"), "tea", {"text": "Alice likes green tea."})
    assert [hit.key for hit in store.search(("alice",), query="tea")] == ["tea"]


def test_a_user_position_no_stored_namespace_reaches_is_refused(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match="user_position"):
        EpisodexStore(memory, user_position=16)
    with pytest.raises(ConfigurationError, match="user_position"):
        EpisodexStore(memory, user_position=10**6)
    # The deepest position that still fits is a working store.
    store = EpisodexStore(memory, agent_id="audit31-depth", user_position=15)
    namespace = (*(f"level{i}" for i in range(15)), "alice")
    store.put(namespace, "tea", {"text": "Alice likes green tea."})
    assert [hit.key for hit in store.search(namespace, query="tea")] == ["tea"]
    # A fixed user makes the position unused, so any is taken.
    fixed = EpisodexStore(memory, agent_id="audit31-depth", user_id="bob", user_position=16)
    fixed.put(("notes",), "tea", {"text": "Bob likes black tea."})
    assert [hit.key for hit in fixed.search(("notes",))] == ["tea"]
