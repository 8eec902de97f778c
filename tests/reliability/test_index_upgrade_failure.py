"""An open that fails while adding a missing payload index leaves the folder openable again.

The index is added right after the shard loads; a failure there used to leave the loaded shard
open (holding its write-ahead log's lock), so a retry in the same process could not load it.
The failure is injected into episodex's own step, the only way to make the engine refuse an
index on a healthy disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe
from episodex import EngineError, EpisodicMemory
from episodex._engines import edge
from episodex.testing import HashEmbedder


def make_old(store: Path) -> set[str]:
    """Drop the speaker index, as a store made before it lacks it; the indexes left."""
    [folder] = [p.parent for p in store.glob("*/episodex.json")]
    shard = qe.EdgeShard.load(str(folder))
    try:
        shard.update(qe.UpdateOperation.delete_field_index("speaker_keys"))
        shard.flush()
        return set(shard.info().payload_schema)
    finally:
        shard.close()


async def test_a_failed_index_upgrade_closes_the_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    mem = EpisodicMemory(store, embedder=HashEmbedder(), splade=False)
    await mem.memorize(
        short_summary="Caroline went hiking",
        long_summary="Caroline told us about hiking",
        user_id="u",
        agent_id="a",
        conversation_id="c",
        speakers=["Caroline"],
    )
    await mem.aclose()
    assert "speaker_keys" not in make_old(store)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise EngineError("cannot index the payload (injected)")

    with monkeypatch.context() as patch:
        patch.setattr(edge.EdgeEngine, "_add_missing_indexes", staticmethod(refuse))
        with pytest.raises(EngineError, match="injected") as failed:
            EpisodicMemory(store, embedder=HashEmbedder(), splade=False)

    # The retry loads the folder again and adds the index this time.
    again = EpisodicMemory(store, embedder=HashEmbedder(), splade=False)
    try:
        hits = await again.recall(user_id="u", agent_id="a", query="what did Caroline do?")
        assert "speaker" in hits["previous_conversations"][0]["streams"]
    finally:
        await again.aclose()
    # The failed open's traceback (which a caller's error report keeps) holds nothing open.
    assert failed.value.__traceback__ is not None
