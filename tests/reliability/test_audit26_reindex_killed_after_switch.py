"""A re-index killed between its switch and its clean-up leaves no second copy behind for good.

The embedded engine switches a re-indexed collection by rewriting its folder map atomically,
then deletes the folder the collection was served from. A process killed between the two (a
window of milliseconds, hit by a SIGKILL in exploratory runs) left that whole old copy on disk,
and nothing ever deleted it: the next switch deletes only the folder it replaces and staging
copies, so the store kept twice its size. The leftover is the folder named after a collection
that the map serves from another folder; opening the store now deletes it.

The test makes that state as the kill leaves it: a finished re-index, then the pre-switch folder
put back beside the served one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from episodex import EpisodicMemory
from episodex.testing import HashEmbedder


def _old() -> HashEmbedder:
    return HashEmbedder(dimension=32, model_id="test/old")


def _new() -> HashEmbedder:
    return HashEmbedder(dimension=48, model_id="test/new")


async def test_the_folder_a_switch_replaced_is_deleted_when_the_store_opens(tmp_path: Path) -> None:
    path = tmp_path / "store"
    memory = EpisodicMemory(path, embedder=_old(), splade=False)
    try:
        await memory.memorize_many(
            [
                {
                    "short_summary": f"order {i}",
                    "long_summary": f"the user asked about order {i}",
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": "c",
                }
                for i in range(10)
            ]
        )
        before = path / "episodes"
        kept = tmp_path / "pre-switch copy"
        shutil.copytree(before, kept)  # the old collection as it was just before the switch
        await memory.reindex(_new(), batch_size=4)
    finally:
        memory.close()
    assert not before.exists()
    shutil.copytree(kept, before)  # what a kill right after the switch leaves on disk

    memory = EpisodicMemory(path, embedder=_new(), splade=False)
    try:
        assert not before.exists()
        assert await memory.count(user_id="u", agent_id="a") == 10
        found = await memory.recall(user_id="u", agent_id="a", query="order 3")
        assert found["previous_conversations"]
    finally:
        memory.close()
    served = [p.name for p in path.iterdir() if p.is_dir()]
    assert len(served) == 1 and served[0].startswith("episodes_reindex_")
