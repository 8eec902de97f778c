"""Exchanges `record_exchange` records at the same time take distinct message indexes.

Each exchange read the conversation's stored length and took the next two indexes; exchanges
recorded at once (threads, tasks awaited together) all read the same length, so they were all
stored as messages 0 to 1. An exchange now also goes after the indexes the ones still in
flight took.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

from episodex import EpisodicMemory
from langchain_episodex import arecord_exchange


def _stored(memory: EpisodicMemory, user: str) -> list[tuple[int, int, str]]:
    items = memory.store.read_recent(50, user_id=user, agent_id="support")
    return sorted((e["start_index"], e["end_index"], e["long_summary_text"]) for e in items)


def test_exchanges_recorded_at_once_take_distinct_indexes(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    start = threading.Barrier(8)

    def record(n: int) -> None:
        start.wait()
        asyncio.run(
            arecord_exchange(
                memory,
                f"Question {n}?",
                f"Answer {n}.",
                user_id=user,
                agent_id="support",
                conversation_id="c1",
            )
        )

    workers = [threading.Thread(target=record, args=(n,)) for n in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    ranges = sorted((s, e) for s, e, _ in _stored(memory, user))
    assert ranges == [(i, i + 1) for i in range(0, 16, 2)]


async def test_exchanges_awaited_together_take_distinct_indexes(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    await asyncio.gather(
        *(
            arecord_exchange(
                memory,
                f"Question {n}?",
                f"Answer {n}.",
                user_id=user,
                agent_id="support",
                conversation_id="c1",
            )
            for n in range(6)
        )
    )
    ranges = sorted((s, e) for s, e, _ in await asyncio.to_thread(_stored, memory, user))
    assert ranges == [(i, i + 1) for i in range(0, 12, 2)]
