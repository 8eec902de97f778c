"""A `memorize` given up on (a timeout) and then retried stores its episode once.

A cancelled `memorize` runs on in its worker thread and stores the episode, but its caller
never gets the point id: it was drawn at random in the thread, at write time. The caller's
natural retry (the same call again) drew another id and stored the episode a second time, so
every timeout that was not really a failure left a duplicate that recall then returned twice.
An episode given without `point_id` now gets an id derived from its content, so the same
episode written again replaces itself; give `point_id` to store identical episodes apart.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from episodex import EngineUnavailableError, EpisodicMemory, open_engine
from episodex.plan import Point
from episodex.testing import FailingEngine, HashEmbedder


class _HeldWrites(FailingEngine):
    """The real engine; an upsert waits until the test lets it through."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.done = threading.Event()

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.entered.set()
        self.release.wait(30)
        self.inner.upsert(collection, points)
        self.done.set()


REFUND: dict[str, Any] = {
    "short_summary": "Refund for order 1234",
    "long_summary": "User asked for a refund; the agent issued it.",
    "user_id": "u1",
    "agent_id": "support",
    "conversation_id": "c1",
    "start_index": 0,
    "end_index": 3,
}


async def test_a_timed_out_memorize_retried_is_stored_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = _HeldWrites(open_engine(location=":memory:"))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        with caplog.at_level(logging.INFO, logger="episodex"):
            write = asyncio.create_task(memory.memorize(**REFUND))
            # The write is under way in its thread (embedded, at the engine) when it times out.
            assert await asyncio.to_thread(engine.entered.wait, 30)
            write.cancel()
            with pytest.raises(asyncio.CancelledError):
                await write
            engine.release.set()
            assert await asyncio.to_thread(engine.done.wait, 30)
        assert await memory.count(user_id="u1", agent_id="support") == 1  # stored meanwhile
        # The caller, told nothing, retries the same call.
        point_id = await memory.memorize(**REFUND)
        assert await memory.count(user_id="u1", agent_id="support") == 1
        hits = await memory.recall(query="refund for order 1234", user_id="u1", agent_id="support")
        assert [h["point_id"] for h in hits["previous_conversations"]] == [point_id]
        # A different episode is still an episode of its own.
        later: dict[str, Any] = {**REFUND, "start_index": 4, "end_index": 6}
        other = await memory.memorize(**later)
        assert other != point_id
        assert await memory.count(user_id="u1", agent_id="support") == 2
    finally:
        engine.release.set()
        memory.close()
        engine.close()


class _FailsSecondUpsert(FailingEngine):
    """The real engine; the second upsert from now on raises, as a server going away does."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.upserts = 0

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.upserts += 1
        if self.upserts == 2:
            self.failures += 1
            raise self.error
        self.inner.upsert(collection, points)


async def test_a_failed_batch_write_keeps_the_stored_twin_it_replaced() -> None:
    # A write taken back deletes the points it made new; an episode it only replaced (its
    # twin was stored before, under the same derived id) must be restored, not deleted.
    engine = _FailsSecondUpsert(open_engine(location=":memory:"))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        first = await memory.memorize(**REFUND)
        engine.upserts = 0
        more: list[dict[str, Any]] = [
            {**REFUND, "start_index": 10 + i, "end_index": 10 + i} for i in range(3)
        ]
        with pytest.raises(EngineUnavailableError):
            await memory.memorize_many([REFUND, *more], batch_size=2)
        assert await memory.count(user_id="u1", agent_id="support") == 1
        kept = await memory.get(first, user_id="u1", agent_id="support")
        assert kept["short_summary_text"] == REFUND["short_summary"]
    finally:
        memory.close()
        engine.close()
