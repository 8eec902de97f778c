"""The classic memory's "kept for retry" error is about its own exchange, not another call's.

`asave_context` decided whether its exchange was left waiting by the recorder's whole pending
count, which also counts the exchanges other calls (a chain's `batch`, threads sharing the
memory) have queued and not yet written. So a call whose exchange was stored logged "could not
record the exchange as an episode; kept for retry" while another call's write was in flight.
It now looks at what the recorder did with its own exchange.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from typing import Any

import pytest
from episodex import EpisodicMemory
from langchain_episodex import EpisodicConversationMemory

_WAIT = 30.0


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + _WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def test_a_stored_exchange_is_not_reported_waiting_for_another_calls_exchange(
    memory: EpisodicMemory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    classic = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id="support", conversation_id="c1"
    )
    store = memory.store
    read_recent, memorize_many = memory.read_recent, store.memorize_many
    second_reading, second_may_go = threading.Event(), threading.Event()
    reads: list[int] = []
    writes: list[int] = []

    # Real reads and writes of the real store, only ordered: the second call reads the
    # conversation's length first and queues its exchange while the first call's write runs.
    async def ordered_read(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        if len(reads) == 1:
            second_reading.set()
            assert await asyncio.to_thread(second_may_go.wait, _WAIT)
        return await read_recent(*args, **kwargs)

    def ordered_write(*args: Any, **kwargs: Any) -> Any:
        writes.append(1)
        if len(writes) == 1:
            second_may_go.set()
            # Both exchanges queued: the first call's (being written) and the second's.
            _until(lambda: classic.stats().pending == 2, "the second exchange to be queued")
        return memorize_many(*args, **kwargs)

    monkeypatch.setattr(memory, "read_recent", ordered_read)
    monkeypatch.setattr(store, "memorize_many", ordered_write)
    caplog.set_level(logging.WARNING, logger="langchain_episodex")

    second = threading.Thread(
        target=classic.save_context,
        args=({"input": "Second question?"}, {"response": "Second answer."}),
    )
    second.start()
    assert second_reading.wait(_WAIT)
    classic.save_context({"input": "First question?"}, {"response": "First answer."})
    second.join(_WAIT)
    assert not second.is_alive()
    monkeypatch.undo()

    stored = memory.store.read_recent(10, user_id=user, agent_id="support")
    assert len(stored) == 2
    assert classic.stats().pending == 0
    assert len(reads) == 2 and len(writes) == 2
    assert not [r.getMessage() for r in caplog.records if "kept for retry" in r.getMessage()]
