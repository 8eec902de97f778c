"""A forget reaches the copies a killed write's records keep of the episodes it replaced.

A write of several batches records, with each batch, the stored payload of each episode it
replaces, so that a call killed midway can be taken back. When taking it back fails, those
records stay, holding the replaced texts, until the store takes the call back later. A forget
deleted only the live episodes: the forgotten texts stayed on disk in the records, and the
later take-back wrote an episode of a forgotten conversation back. A forget now deletes the
copies of the episodes it forgets from those records too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from episodex import EngineError, EpisodeStore, open_engine
from episodex._engines.base import Engine
from episodex._engines.plan import Filter, Point
from episodex.testing import FailingEngine, HashEmbedder

PID = "11111111-2222-4333-8444-555555555555"


class _BreaksMidway(FailingEngine):
    """Every write fails from the second upsert of a call on (as a process killed there)."""

    armed = False

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        super().upsert(collection, points)
        if self.armed:
            self.writes = True


@pytest.fixture(params=["edge", "memory"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    inner = (
        open_engine(path=str(tmp_path / "s"))
        if request.param == "edge"
        else open_engine(location=":memory:")
    )
    try:
        yield inner
    finally:
        inner.close()


def _episode(text: str, conversation: str, point_id: str | None = None) -> dict[str, Any]:
    ep: dict[str, Any] = {
        "short_summary": text,
        "long_summary": f"{text}, at length",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": conversation,
    }
    if point_id is not None:
        ep["point_id"] = point_id
    return ep


def _left_midway(engine: Engine) -> None:
    """The secret episode replaced by a write of two batches whose taking back failed."""
    EpisodeStore(engine, HashEmbedder()).memorize_many([_episode("the secret", "c0", PID)])
    failing = _BreaksMidway(engine)
    store = EpisodeStore(failing, HashEmbedder())
    failing.armed = True
    replacing = [_episode("moved on", "c1", PID)] + [_episode(f"n{i}", "c2") for i in range(5)]
    with pytest.raises(EngineError, match="taking them back failed"):
        store.memorize_many(replacing, batch_size=3)


def _on_disk(engine: Engine) -> str:
    hits, _ = engine.scroll("episodes", Filter(), limit=10_000)
    return repr([h.payload for h in hits])


@pytest.mark.parametrize("how", ["conversation", "everything", "point"])
def test_a_forget_deletes_the_copies_a_killed_writes_records_keep(engine: Engine, how: str) -> None:
    _left_midway(engine)
    assert "the secret" in _on_disk(engine)  # the record's copy of the replaced episode
    # Taking the call back fails when the store opens (logged; the store opens all the same).
    failing = FailingEngine(engine, writes=True)
    store = EpisodeStore(failing, HashEmbedder())
    failing.writes = False
    if how == "conversation":
        store.forget(user_id="u", agent_id="a", conversation_id="c0")
    elif how == "everything":
        store.forget(user_id="u", agent_id="a", everything=True)
    else:
        assert store.forget(user_id="u", agent_id="a", point_id=PID) == 1
    assert "the secret" not in _on_disk(engine)
    # The store opened next takes the killed call back: nothing forgotten comes back.
    again = EpisodeStore(engine, HashEmbedder())
    assert again.count(user_id="u", agent_id="a", conversation_id="c0") == 0
    assert "the secret" not in _on_disk(engine)
    if how == "conversation":
        # What the call added is gone; the episode it replaced was forgotten.
        assert again.count(user_id="u", agent_id="a") == 0
