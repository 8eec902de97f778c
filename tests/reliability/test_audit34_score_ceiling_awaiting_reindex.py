"""`score_ceiling` is refused where `recall` is: on a store holding other models' vectors.

A memory opened with `for_reindex=True` (or one whose store another process re-indexed)
refuses `recall` with `EmbedderMismatchError`, but `score_ceiling` gave a number for a recall
that could not run, computed with this memory's models. It now raises the same error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import EmbedderMismatchError, EpisodicMemory
from episodex.testing import HashEmbedder


async def test_score_ceiling_is_refused_like_recall_on_a_store_awaiting_reindex(
    tmp_path: Path,
) -> None:
    old = EpisodicMemory(path=tmp_path, embedder=HashEmbedder(model_id="old-model"), splade=False)
    await old.memorize(
        short_summary="asked about parcel 1",
        long_summary="The user asked where parcel 1 is; the agent tracked it.",
        user_id="u1",
        agent_id="support",
        conversation_id="c1",
    )
    assert await old.score_ceiling("parcel") > 0
    old.close()

    memory = EpisodicMemory(
        path=tmp_path, embedder=HashEmbedder(model_id="new-model"), splade=False, for_reindex=True
    )
    try:
        with pytest.raises(EmbedderMismatchError, match="old-model"):
            await memory.recall(user_id="u1", agent_id="support", query="parcel")
        with pytest.raises(EmbedderMismatchError, match="old-model"):
            await memory.score_ceiling("parcel")
        await memory.reindex()
        assert await memory.score_ceiling("parcel") > 0
    finally:
        memory.close()
