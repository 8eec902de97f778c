"""The recorder's queue bound drops only what a failing store could not take, never before trying.

`max_pending` bounds the episodes kept in RAM while the store fails. The bound was applied as
each episode was queued, before the write: a span of more episodes than `max_pending`, or the
turn that came just as the store recovered from an outage, dropped the oldest episodes although
the store stored the rest a moment later. Now a recorder that writes at once applies the bound
after its write, to what the store could not take; a deferred one still applies it at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder

from ._support import StoreDown, recorder_episode, stored_summaries


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _episode(n: int) -> dict[str, Any]:
    return recorder_episode(n, start_index=2 * n, end_index=2 * n + 1)


async def test_a_span_longer_than_the_bound_is_stored_whole(memory: EpisodicMemory) -> None:
    recorder = EpisodeRecorder(memory, max_pending=2)
    ids = await recorder.record_many([_episode(n) for n in (1, 2, 3)])
    assert None not in ids
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]
    stats = recorder.stats()
    assert (stats.recorded, stats.dropped, stats.pending) == (3, 0, 0)


async def test_the_turn_after_an_outage_keeps_the_backlog(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=2)
    await recorder.record(**_episode(1))
    await recorder.record(**_episode(2))
    assert recorder.stats().pending == 2  # the queue is full, nothing lost yet
    store.down = False
    assert await recorder.record(**_episode(3)) is not None
    assert stored_summaries(memory) == ["question 1", "question 2", "question 3"]
    assert recorder.stats().dropped == 0


async def test_the_bound_still_holds_while_the_store_fails(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StoreDown.put_in(memory, monkeypatch)
    recorder = EpisodeRecorder(memory, max_pending=2)
    assert await recorder.record_many([_episode(n) for n in (1, 2, 3)]) == [None] * 3
    stats = recorder.stats()
    assert (stats.pending, stats.dropped) == (2, 1)
    store.down = False
    assert await recorder.flush() == 0
    assert stored_summaries(memory) == ["question 2", "question 3"]
