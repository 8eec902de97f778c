"""A user's own collection named like a staging copy is never taken for one.

A re-index fills the staging collection `<collection>_reindex_<12 hex digits>`; its switch
dropped every collection of that form holding episodes that no name was served from (copies a
killed run left), and a forget deleted the forgotten episodes from each of them. A user's own
episode collection of that form (`episodes_reindex_0123456789ab`) was taken for such a copy: a
re-index of `episodes` deleted it whole, and a forget in `episodes` deleted its episodes too. A
staging copy is now marked as one (the collection it is a copy of) when the re-index makes it,
and only marked copies are dropped or reached by a forget, on both engines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodeStore, SyncEpisodicMemory
from episodex.testing import HashEmbedder

OWN = "episodes_reindex_0123456789ab"


def old() -> HashEmbedder:
    return HashEmbedder(dimension=32, model_id="test/old")


def new() -> HashEmbedder:
    return HashEmbedder(dimension=48, model_id="test/new")


def _episodes(user: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{user} note {i}",
            "long_summary": f"{user} told the agent note number {i}",
            "user_id": user,
            "agent_id": "a",
            "conversation_id": f"c{i % 2}",
        }
        for i in range(n)
    ]


@pytest.fixture(params=["edge", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncEpisodicMemory]:
    if request.param == "edge":
        mem = SyncEpisodicMemory(tmp_path / "s", embedder=old(), splade=False)
    else:
        mem = SyncEpisodicMemory(location=":memory:", embedder=old(), splade=False)
    try:
        yield mem
    finally:
        mem.close()


def _own(mem: SyncEpisodicMemory) -> EpisodeStore:
    return EpisodeStore(mem.store.engine, old(), collection=OWN)


def test_a_reindex_keeps_a_collection_named_like_its_staging_copy(
    memory: SyncEpisodicMemory,
) -> None:
    memory.memorize_many(_episodes("u", 6))
    own = _own(memory)
    own.memorize_many(_episodes("u", 3))
    memory.reindex(new(), batch_size=4)
    assert memory.count(user_id="u", agent_id="a") == 6
    assert _own(memory).count(user_id="u", agent_id="a") == 3  # was 0: dropped


@pytest.mark.parametrize("how", ["everything", "conversation", "point"])
def test_a_forget_leaves_a_collection_named_like_a_staging_copy(
    memory: SyncEpisodicMemory, how: str
) -> None:
    ids = memory.memorize_many(_episodes("u", 4))
    own = _own(memory)
    own.memorize_many(_episodes("u", 4))
    if how == "everything":
        memory.forget(user_id="u", agent_id="a", everything=True)
    elif how == "conversation":
        memory.forget(user_id="u", agent_id="a", conversation_id="c0")
    else:
        assert memory.forget(user_id="u", agent_id="a", point_id=ids[0]) == 1
    assert own.count(user_id="u", agent_id="a") == 4


class _Stop(Exception):
    pass


def _stop(done: int, total: int) -> None:
    raise _Stop


def _copies(mem: SyncEpisodicMemory, folder: Path) -> list[str]:
    engine: Any = mem.store.engine
    if engine.kind == "edge":
        names = [p.name for p in (folder / "s").iterdir()]
    else:
        collections = engine.client.get_collections().collections
        names = [c.name.removeprefix("episodex_") for c in collections]
    return sorted(name for name in names if "_reindex_" in name)


def test_the_copy_a_killed_reindex_left_is_still_forgotten_and_dropped(
    memory: SyncEpisodicMemory, tmp_path: Path
) -> None:
    memory.memorize_many(_episodes("u", 6))
    _own(memory).memorize_many(_episodes("u", 3))
    abandoning = HashEmbedder(dimension=40, model_id="test/abandoned")
    with pytest.raises(_Stop):
        memory.reindex(abandoning, on_progress=_stop)
    [abandoned] = [name for name in _copies(memory, tmp_path) if name != OWN]
    memory.forget(user_id="u", agent_id="a", conversation_id="c0")
    staged = EpisodeStore(memory.store.engine, abandoning, collection=abandoned)
    assert staged.count(user_id="u", agent_id="a") == 3  # the forgotten conversation is gone
    memory.reindex(new(), batch_size=4)
    left = _copies(memory, tmp_path)
    assert OWN in left and abandoned not in left
    assert _own(memory).count(user_id="u", agent_id="a") == 3


def test_the_copy_an_older_release_left_unmarked_is_still_forgotten_and_dropped(
    tmp_path: Path,
) -> None:
    # A copy left by a re-index killed under an older release has no mark: it is still taken
    # for a copy by its name and kind, so what is forgotten does not stay in it.
    memory = SyncEpisodicMemory(tmp_path / "s", embedder=old(), splade=False)
    try:
        memory.memorize_many(_episodes("u", 6))
        abandoning = HashEmbedder(dimension=40, model_id="test/abandoned")
        with pytest.raises(_Stop):
            memory.reindex(abandoning, on_progress=_stop)
        [abandoned] = _copies(memory, tmp_path)
    finally:
        memory.close()
    manifest = tmp_path / "s" / abandoned / "episodex.json"
    written = json.loads(manifest.read_text())
    assert written.pop("staging_of") == "episodes"
    manifest.write_text(json.dumps(written))
    memory = SyncEpisodicMemory(tmp_path / "s", embedder=old(), splade=False)
    try:
        memory.forget(user_id="u", agent_id="a", conversation_id="c0")
        staged = EpisodeStore(memory.store.engine, abandoning, collection=abandoned)
        assert staged.count(user_id="u", agent_id="a") == 3
        memory.reindex(new(), batch_size=4)
        assert abandoned not in _copies(memory, tmp_path)
        assert memory.count(user_id="u", agent_id="a") == 3
    finally:
        memory.close()
