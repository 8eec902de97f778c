"""The recorder stores each episode once, and a deferred recorder keeps working after `aclose`.

Two defects: `record(point_id=None)` (the default of `EpisodicMemory.memorize`, whose keyword
arguments `record` takes) kept the None, so the stored episode got an id the recorder never
learned; the episode stayed pending and was written again on every later write, one more
copy each time. And a deferred recorder, once closed, queued later episodes for a writer thread
that had stopped: they were never written, and `flush()` waited forever for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from episodex import EpisodeRecorder, EpisodicMemory
from episodex.testing import HashEmbedder


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


T = TypeVar("T")


def _run_within(seconds: float, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `main` in a daemon thread; fail (instead of hanging the suite) if it does not end."""
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(main())), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    assert out, "the coroutine raised; see the thread's traceback"
    return out[0]


def _episode(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "short_summary": f"question {n}",
        "long_summary": f"User asked question {n}; the agent answered it.",
        "user_id": "u1",
        "agent_id": "support",
        "conversation_id": "c1",
        **extra,
    }


def test_explicit_none_point_id_is_stored_once(memory: EpisodicMemory) -> None:
    async def main() -> list[str | None]:
        recorder = EpisodeRecorder(memory)
        ids = [await recorder.record(**_episode(n, point_id=None)) for n in range(3)]
        await recorder.flush()
        return ids

    ids = asyncio.run(main())
    assert all(i is not None for i in ids)
    assert len(set(ids)) == 3
    assert memory.store.count(user_id="u1", agent_id="support") == 3


def test_explicit_none_point_id_is_not_left_pending(memory: EpisodicMemory) -> None:
    recorder = EpisodeRecorder(memory)

    async def main() -> int:
        await recorder.record(**_episode(1, point_id=None))
        return await recorder.flush()

    assert asyncio.run(main()) == 0
    stats = recorder.stats()
    assert (stats.recorded, stats.pending) == (1, 0)


def test_deferred_recorder_writes_what_is_recorded_after_close(memory: EpisodicMemory) -> None:
    async def main() -> tuple[int, int]:
        recorder = EpisodeRecorder(memory, deferred=True)
        await recorder.record(**_episode(1))
        assert await recorder.aclose() == 0
        await recorder.record(**_episode(2))
        # Before the fix this waited forever for the stopped writer thread.
        left = await recorder.flush()
        return left, recorder.stats().recorded

    left, recorded = _run_within(30, main)
    assert (left, recorded) == (0, 2)
    assert memory.store.count(user_id="u1", agent_id="support") == 2


def test_deferred_recorder_closed_twice_does_not_hang(memory: EpisodicMemory) -> None:
    async def main() -> int:
        recorder = EpisodeRecorder(memory, deferred=True)
        await recorder.aclose()
        await recorder.record(**_episode(1))
        return await recorder.aclose()

    assert _run_within(30, main) == 0
    assert memory.store.count(user_id="u1", agent_id="support") == 1
