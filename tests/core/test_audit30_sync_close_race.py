"""A sync twin's call racing `close()` ends in `StoreClosedError`, nothing else.

A call of `SyncEpisodicMemory` is let in (the twin is open), then handed to the twin's private
event loop. When `close()` from another thread stopped and closed that loop between the two
steps, the hand-off raised asyncio's raw `RuntimeError("Event loop is closed")`, which code
catching `StoreClosedError` (to reopen the store) missed. And when `close()` failed a call
that was handed off but had not started yet, the loop still tried to start it: asyncio logged
"Exception in callback" and `concurrent.futures` a CRITICAL "in unexpected state".

The tests put `close()` exactly in those windows by intercepting the hand-off to the loop
(`call_soon_threadsafe` of the twin's private loop): no timing is involved.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from episodex import StoreClosedError, SyncEpisodicMemory
from episodex.testing import HashEmbedder

GUARD = 60  # seconds: only a deadlock guard, never how the calls meet


@pytest.fixture
def twin() -> Iterator[SyncEpisodicMemory]:
    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _private_loop(twin: SyncEpisodicMemory) -> asyncio.AbstractEventLoop:
    return twin._loop._loop  # pyright: ignore[reportPrivateUsage]


def _close_in_thread(twin: SyncEpisodicMemory) -> None:
    closer = threading.Thread(target=twin.close, daemon=True)
    closer.start()
    closer.join(GUARD)
    assert not closer.is_alive(), "close() never returned"


def test_a_call_closed_before_its_hand_off_raises_store_closed_error(
    twin: SyncEpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = _private_loop(twin)
    real = loop.call_soon_threadsafe
    caller = threading.current_thread()
    closed = threading.Event()

    def close_first(callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is caller and not closed.is_set():
            closed.set()
            _close_in_thread(twin)  # the call was let in; now the loop is stopped and closed
        return real(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", close_first)
    with pytest.raises(StoreClosedError):
        twin.count(user_id="u1", agent_id="support")
    assert closed.is_set()
    with pytest.raises(StoreClosedError):  # and every call after it
        twin.count(user_id="u1", agent_id="support")


def test_a_call_closed_before_it_starts_is_not_started(
    twin: SyncEpisodicMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    loop = _private_loop(twin)
    real = loop.call_soon_threadsafe
    caller = threading.current_thread()
    unblock = threading.Event()
    handed_off = threading.Event()

    def close_before_start(callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is caller and not handed_off.is_set():
            handed_off.set()
            # The loop is kept busy, so the call waits there, handed off but not started.
            real(lambda: unblock.wait(GUARD))
            handle = real(callback, *args, **kwargs)
            _close_in_thread(twin)
            return handle
        # close() fails the waiting call, then asks the loop to stop: let the loop go on.
        unblock.set()
        return real(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", close_before_start)
    with caplog.at_level(logging.DEBUG), pytest.raises(StoreClosedError):
        twin.count(user_id="u1", agent_id="support")
    assert handed_off.is_set()
    problems = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert problems == []
