"""A LangGraph batch that replaces one memory and removes another is applied whole or not at all.

`EpisodexStore.batch` hands its puts and deletes to `ItemStore.write`, which stored the puts
and then deleted with a second engine call: when that call failed, the batch raised, yet the
new memory was stored beside the one it was meant to remove. The store's engine here is the
real embedded one, made to fail once where the test says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodexError, EpisodicMemory, ItemStore
from episodex.testing import FailingEngine, HashEmbedder
from langchain_episodex import EpisodexStore
from langgraph.store.base import PutOp


def _memories(store: EpisodexStore) -> dict[str, Any]:
    return {item.key: item.value for item in store.search(("alice",), limit=20)}


@pytest.mark.parametrize("method", ["upsert", "delete"])
async def test_a_batch_failing_part_way_is_whole_or_not_at_all(method: str, tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    engine = FailingEngine(memory.engine)
    store = EpisodexStore(ItemStore(engine, memory.embedder), agent_id="assistant")
    try:
        await store.aput(("alice", "food"), "diet", {"text": "Alice is vegetarian."})
        await store.aput(("alice", "food"), "allergy", {"text": "Allergic to peanuts."})
        before = _memories(store)
        engine.fail_next(method)
        batch = [
            PutOp(("alice", "food"), "diet", {"text": "Alice is vegan now."}),
            PutOp(("alice", "food"), "allergy", None),  # LangGraph's delete
        ]
        try:
            await store.abatch(batch)
        except EpisodexError:
            assert _memories(store) == before
        else:
            assert _memories(store) == {"diet": {"text": "Alice is vegan now."}}
        assert engine.failures == 1
        # Whatever happened, the batch run again gives the new state.
        await store.abatch(batch)
        assert _memories(store) == {"diet": {"text": "Alice is vegan now."}}
        assert await store.aget(("alice", "food"), "allergy") is None
    finally:
        memory.close()
