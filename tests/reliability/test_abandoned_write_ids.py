"""A `memorize` given up on (a timeout) logs the point id its completed write stored.

The call goes on in its thread and stores the episode, but its caller never gets the id back.
Identical episodes stay separate episodes (ids are drawn at random, as in every vector store
users know), so the log is where the caller finds the id to replace or forget the episode
instead of storing it again. Results that are not ids (a recalled block holds users' words)
stay out of the log.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from episodex import EngineUnavailableError, EpisodicMemory, ValidationError, open_engine
from episodex.plan import Point
from episodex.testing import FailingEngine, HashEmbedder


class _Held(FailingEngine):
    """The real engine; a call of `method` (`upsert` or `scroll`) waits until the test lets it."""

    def __init__(self, inner: Any, method: str) -> None:
        super().__init__(inner)
        self.method = method
        self.entered = threading.Event()
        self.release = threading.Event()
        self.done = threading.Event()

    def _held(self, method: str, call: Any) -> Any:
        if method != self.method:
            return call()
        self.entered.set()
        self.release.wait(30)
        try:
            return call()
        finally:
            self.done.set()

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self._held("upsert", lambda: self.inner.upsert(collection, points))

    def scroll(self, *args: Any, **kwargs: Any) -> Any:
        return self._held("scroll", lambda: self.inner.scroll(*args, **kwargs))


REFUND: dict[str, Any] = {
    "short_summary": "Refund for order 1234",
    "long_summary": "User asked for a refund; the agent issued it.",
    "user_id": "u1",
    "agent_id": "support",
    "conversation_id": "c1",
}


async def _abandoned(engine: _Held, call: Any) -> None:
    task = asyncio.create_task(call)
    assert await asyncio.to_thread(engine.entered.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    engine.release.set()
    assert await asyncio.to_thread(engine.done.wait, 30)
    for _ in range(100):  # the log line is written by a callback on the loop
        await asyncio.sleep(0.01)


async def test_a_timed_out_memorize_logs_the_id_it_stored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = _Held(open_engine(location=":memory:"), "upsert")
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        with caplog.at_level(logging.INFO, logger="episodex"):
            await _abandoned(engine, memory.memorize(**REFUND))
        page = await memory.read_recent(user_id="u1", agent_id="support", n=10)
        assert len(page) == 1
        stored = page[0]["point_id"]
        lines = [r.getMessage() for r in caplog.records if "cancelled by its caller" in r.message]
        assert len(lines) == 1
        assert f"under point ids {stored}" in lines[0]
        # With the id the caller replaces the episode rather than storing it twice.
        await memory.memorize(**REFUND, point_id=stored)
        assert await memory.count(user_id="u1", agent_id="support") == 1
        # Identical episodes without ids are two episodes: nothing is merged behind the caller.
        await memory.memorize(**REFUND)
        assert await memory.count(user_id="u1", agent_id="support") == 2
    finally:
        engine.release.set()
        memory.close()
        engine.close()


async def test_a_timed_out_read_logs_none_of_what_it_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A guard: only ids are logged; a read's result holds users' words.
    engine = _Held(open_engine(location=":memory:"), "scroll")
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        await memory.memorize(**REFUND)
        with caplog.at_level(logging.INFO, logger="episodex"):
            await _abandoned(engine, memory.read_recent(user_id="u1", agent_id="support", n=10))
        lines = [r.getMessage() for r in caplog.records if "cancelled by its caller" in r.message]
        assert len(lines) == 1
        assert "point ids" not in lines[0]
        assert "Refund" not in lines[0]
    finally:
        engine.release.set()
        memory.close()
        engine.close()


async def test_fail_next_fails_one_call_of_one_method() -> None:
    engine = FailingEngine(open_engine(location=":memory:"))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        await memory.memorize(**REFUND)
        engine.fail_next("count")
        with pytest.raises(EngineUnavailableError):
            await memory.count(user_id="u1", agent_id="support")
        assert await memory.count(user_id="u1", agent_id="support") == 1  # once only
        assert engine.failures == 1
        with pytest.raises(ValidationError, match="fail_next takes one of"):
            engine.fail_next("ensure_collection")
    finally:
        memory.close()
        engine.close()
