"""Writes made while a re-index runs survive its switch.

A re-index copies every episode into a staging collection, then, holding the store's write
lock, copies what was added meanwhile and switches. Two kinds of write were lost:

- an episode replaced (memorized again with its `point_id`) after its copy was staged: the
  catch-up copied only ids missing from the staging collection, so the switch brought back the
  old text;
- an episode memorized without a `point_id` while the switch was being made: such writes did
  not take the write lock, so one could land in the old collection after the catch-up and be
  dropped with it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from episodex import Engine, SyncEpisodicMemory
from episodex.testing import HashEmbedder


def _old() -> HashEmbedder:
    return HashEmbedder(dimension=32, model_id="test/old")


def _new() -> HashEmbedder:
    return HashEmbedder(dimension=48, model_id="test/new")


def _episode(i: int, tag: str = "episode", point_id: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "short_summary": f"{tag} {i} about order {i}",
        "long_summary": f"the user asked about order {i}; the agent answered {tag}",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": f"c{i % 3}",
    }
    if point_id is not None:
        record["point_id"] = point_id
    return record


def test_an_episode_replaced_during_a_reindex_keeps_its_new_text(tmp_path: Path) -> None:
    with SyncEpisodicMemory(tmp_path / "s", embedder=_old(), splade=False) as mem:
        ids = mem.memorize_many([_episode(i) for i in range(120)])

        def meanwhile(done: int, total: int) -> None:
            if done == total:  # every episode is staged: now one is replaced
                mem.store.memorize_many([_episode(0, "replaced", point_id=ids[0])])

        report = mem.reindex(_new(), batch_size=50, on_progress=meanwhile)
        assert report.episodes == 120
        assert mem.count(user_id="u", agent_id="a") == 120
        stored = mem.get(ids[0], user_id="u", agent_id="a")
        assert stored["short_summary_text"] == "replaced 0 about order 0"
        # Its vectors are the new embedder's, of the new text: recall finds it by that text.
        found = mem.recall(user_id="u", agent_id="a", query="replaced")["previous_conversations"]
        assert found[0]["point_id"] == ids[0]


class _WriteDuringSwitch:
    """The real engine; while the re-index switches, another thread memorizes an episode."""

    def __init__(self, inner: Engine, write: Any) -> None:
        self.inner = inner
        self.write = write
        self.writer: threading.Thread | None = None

    def engine(self) -> Engine:
        return cast(Engine, self)

    def switch_collection(self, collection: str, staging: str) -> None:
        self.writer = threading.Thread(target=self.write)
        self.writer.start()
        # Long enough for an unguarded write to land in the collection being replaced.
        self.writer.join(timeout=1.0)
        self.inner.switch_collection(collection, staging)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_episode_memorized_during_the_switch_is_kept(tmp_path: Path) -> None:
    with SyncEpisodicMemory(tmp_path / "s", embedder=_old(), splade=False) as base:
        base.memorize_many([_episode(i) for i in range(60)])
        failures: list[BaseException] = []
        written: list[Sequence[str]] = []

        def write() -> None:
            try:
                written.append(mem.store.memorize_many([_episode(999, "during the switch")]))
            except BaseException as exc:  # reported below, not lost in the thread
                failures.append(exc)

        wrapper = _WriteDuringSwitch(base.engine, write)
        mem = SyncEpisodicMemory(engine=wrapper.engine(), embedder=_old(), splade=False)
        try:
            mem.reindex(_new(), batch_size=50)
            assert wrapper.writer is not None
            wrapper.writer.join(timeout=30)
            assert not failures and len(written) == 1
            assert mem.count(user_id="u", agent_id="a") == 61
            stored = mem.get(written[0][0], user_id="u", agent_id="a")
            assert stored["short_summary_text"] == "during the switch 999 about order 999"
            found = mem.recall(user_id="u", agent_id="a", query="during the switch")
            assert found["previous_conversations"][0]["point_id"] == written[0][0]
        finally:
            mem.close()
