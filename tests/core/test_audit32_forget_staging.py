"""A forget reaches the copies an interrupted re-index left in its staging collection.

A re-index copies every episode into a staging collection before it switches to it; killed or
failed midway, that collection stays on disk until a later re-index finishes. `forget` deleted
only from the live collection, so a user who asked to be forgotten still had their texts in the
staging copy (until some later re-index, maybe never). It now deletes them there too, first: a
staging collection that cannot be reached leaves the live episodes untouched (typed error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from episodex import EngineError, EpisodeStore, EpisodicMemory, SyncEpisodicMemory
from episodex.testing import HashEmbedder


def old() -> HashEmbedder:
    return HashEmbedder(dimension=32, model_id="test/old")


def new() -> HashEmbedder:
    return HashEmbedder(dimension=48, model_id="test/new")


def _episodes(user: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{user} secret {i}",
            "long_summary": f"{user} told the agent secret number {i}",
            "user_id": user,
            "agent_id": "a",
            "conversation_id": f"c{i % 2}",
        }
        for i in range(n)
    ]


class _Stop(Exception):
    pass


def _interrupt(done: int, total: int) -> None:
    if done == total:  # everything copied, not switched
        raise _Stop


def _staged(store: EpisodeStore, name: str, user: str) -> int:
    staged = EpisodeStore(
        store.engine, new(), splade=store.splade, collection=name, for_reindex=True
    )
    return staged.count(user_id=user, agent_id="a")


def _staging_names(path: Path) -> list[str]:
    return [p.name for p in path.iterdir() if p.name.startswith("episodes_reindex_")]


@pytest.mark.parametrize("reopen", [False, True], ids=["open", "on-disk"])
def test_forget_deletes_the_copies_an_interrupted_reindex_staged(
    tmp_path: Path, *, reopen: bool
) -> None:
    path = tmp_path / "s"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        mem.memorize_many(_episodes("gone", 6) + _episodes("kept", 4))
        with pytest.raises(_Stop):
            mem.reindex(new(), batch_size=4, on_progress=_interrupt)
        if not reopen:
            assert mem.forget(user_id="gone", agent_id="a", everything=True) == 6
    [name] = _staging_names(path)
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        if reopen:
            assert mem.forget(user_id="gone", agent_id="a", everything=True) == 6
        assert _staged(mem.store, name, "gone") == 0
        assert _staged(mem.store, name, "kept") == 4
    # The resumed re-index switches to it: the forgotten stay gone, the rest all there.
    with SyncEpisodicMemory(path, embedder=new(), for_reindex=True) as mem:
        report = mem.reindex(batch_size=4)
        assert report.episodes == 4 and report.removed == 0
        assert mem.count(user_id="gone", agent_id="a") == 0
        assert mem.count(user_id="kept", agent_id="a") == 4


def test_forget_one_conversation_and_one_episode_reach_the_staging_copy(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        ids = mem.memorize_many(_episodes("u", 6))
        with pytest.raises(_Stop):
            mem.reindex(new(), batch_size=4, on_progress=_interrupt)
        [name] = _staging_names(path)
        assert mem.forget(user_id="u", agent_id="a", conversation_id="c0") == 3
        assert mem.forget(user_id="u", agent_id="a", point_id=ids[1]) == 1
        assert _staged(mem.store, name, "u") == 2
        assert mem.count(user_id="u", agent_id="a") == 2


async def test_forget_reaches_the_staging_copy_on_qdrant_client_memory_mode() -> None:
    mem = EpisodicMemory(location=":memory:", embedder=old())
    try:
        await mem.memorize_many(_episodes("gone", 6) + _episodes("kept", 4))
        with pytest.raises(_Stop):
            await mem.reindex(new(), batch_size=4, on_progress=_interrupt)
        assert await mem.forget(user_id="gone", agent_id="a", everything=True) == 6
        engine: Any = mem.store.engine
        names = [
            "episodes_reindex_" + c.name.rsplit("_reindex_", 1)[1]
            for c in engine.client.get_collections().collections
            if "_reindex_" in c.name
        ]
        [name] = names
        assert _staged(mem.store, name, "gone") == 0
        assert _staged(mem.store, name, "kept") == 4
        report = await mem.reindex(new())
        assert report.episodes == 4
        assert await mem.count(user_id="gone", agent_id="a") == 0
    finally:
        mem.close()


def test_a_staging_copy_that_cannot_be_reached_leaves_the_live_episodes(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        mem.memorize_many(_episodes("u", 6))
        with pytest.raises(_Stop):
            mem.reindex(new(), batch_size=4, on_progress=_interrupt)
    [name] = _staging_names(path)
    # A staging folder that cannot be opened: its manifest damaged.
    (path / name / "episodex.json").write_text("{not json")
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        with pytest.raises(EngineError):
            mem.forget(user_id="u", agent_id="a", everything=True)
        assert mem.count(user_id="u", agent_id="a") == 6
