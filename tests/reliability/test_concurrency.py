"""Concurrency: a hundred writers and readers at once on one memory lose nothing and see exact
counts; the sync facade is safe from several threads."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from episodex import EpisodicMemory, SyncEpisodicMemory, ValidationError

# Slow: hundreds of concurrent writers and readers; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

USERS = [f"user-{i}" for i in range(10)]


def _episode(user: str, n: int, conv: str = "c") -> dict[str, Any]:
    return {
        "short_summary": f"{user} asked about invoice {n}",
        "long_summary": f"{user} asked about invoice {n}; the agent explained the charges",
        "user_id": user,
        "agent_id": "support",
        "conversation_id": conv,
    }


async def test_100_concurrent_writers_and_readers(memory: EpisodicMemory) -> None:
    # A tenant whose episodes are forgotten one by one while everything else runs.
    doomed = await memory.memorize_many([_episode("doomed", i) for i in range(20)])
    written: dict[str, list[str]] = {u: [] for u in USERS}
    errors: list[BaseException] = []

    async def writer(i: int) -> None:
        user = USERS[i % len(USERS)]
        if i % 3:
            written[user].append(await memory.memorize(**_episode(user, i, conv=f"c{i % 4}")))
        else:
            written[user].extend(
                await memory.memorize_many([_episode(user, i * 100 + k) for k in range(3)])
            )

    async def reader(i: int) -> None:
        user = USERS[i % len(USERS)]
        kind = i % 5
        if kind == 0:
            res = await memory.recall(user_id=user, agent_id="support", query=f"invoice {i}")
            assert all(it["user_id"] == user for side in res.values() for it in side)
        elif kind == 1:
            assert 0 <= await memory.count(user_id=user, agent_id="support") <= 100
        elif kind == 2:
            for item in await memory.read_recent(5, user_id=user, agent_id="support"):
                assert item["user_id"] == user
        elif kind == 3:
            stats = await memory.stats(user_id=user, agent_id="support")
            assert stats["user_id"] == user
        else:
            assert (
                await memory.forget(user_id="doomed", agent_id="support", point_id=doomed[i // 5])
                == 1
            )

    async def guarded(coro: Any) -> None:
        try:
            await coro
        except BaseException as exc:  # collected, so one failure does not hide the others
            errors.append(exc)

    tasks = [guarded(writer(i)) for i in range(60)] + [guarded(reader(i)) for i in range(40)]
    assert len(tasks) == 100
    await asyncio.gather(*tasks)
    assert errors == []

    for user in USERS:
        ids = written[user]
        assert len(set(ids)) == len(ids)
        assert await memory.count(user_id=user, agent_id="support") == len(ids)
        exported = {
            it["point_id"]
            for it in await memory.read_recent(1000, user_id=user, agent_id="support")
        }
        assert exported == set(ids), f"{user}: lost {set(ids) - exported}"
    assert sum(map(len, written.values())) == 40 * 1 + 20 * 3
    # Readers 4, 9, ..., 39 forgot doomed[0..7]: exactly those are gone.
    assert await memory.count(user_id="doomed", agent_id="support") == 20 - 8


async def test_racing_writers_cannot_claim_one_new_id_for_different_users(
    memory: EpisodicMemory,
) -> None:
    """Ten users write the same new point id at once: one wins, the others are refused."""
    pid = str(uuid.uuid4())

    async def claim(user: str) -> str | None:
        try:
            return await memory.memorize(**_episode(user, 0), point_id=pid)
        except ValidationError as exc:
            assert "another user or agent" in str(exc)
            return None

    results = await asyncio.gather(*(claim(u) for u in USERS))
    winners = [u for u, r in zip(USERS, results, strict=True) if r is not None]
    assert len(winners) == 1
    for user in USERS:
        assert await memory.count(user_id=user, agent_id="support") == (1 if user in winners else 0)
    owner = await memory.get(pid, user_id=winners[0], agent_id="support")
    assert owner["short_summary_text"] == _episode(winners[0], 0)["short_summary"]


def test_sync_memory_is_safe_from_several_threads(memory: EpisodicMemory) -> None:
    sync = SyncEpisodicMemory(memory=memory)
    try:

        def work(t: int) -> list[str]:
            user = f"thread-{t % 4}"
            ids = []
            for n in range(10):
                ids.append(sync.memorize(**_episode(user, t * 100 + n)))
                assert sync.count(user_id=user, agent_id="support") >= 1
                if n % 3 == 0:
                    res = sync.recall(user_id=user, agent_id="support", query=f"invoice {n}")
                    assert all(it["user_id"] == user for side in res.values() for it in side)
            return ids

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(work, range(8)))
        for u in range(4):
            ids = [pid for t, r in enumerate(results) if t % 4 == u for pid in r]
            assert len(ids) == 20
            assert sync.count(user_id=f"thread-{u}", agent_id="support") == 20
            assert {
                it["point_id"]
                for it in sync.read_recent(100, user_id=f"thread-{u}", agent_id="support")
            } == set(ids)
    finally:
        sync.close()  # closing twice is fine: the fixture closes the memory again
