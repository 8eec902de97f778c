"""EpisodeRecorder: every write ends stored or queued, never raised, never duplicated."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EngineUnavailableError, EpisodeRecorder, EpisodicMemory


@pytest.fixture
def memory(embedder: Any) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=embedder)
    yield mem
    mem.close()


def _episode(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "short_summary": f"question {n}",
        "long_summary": f"User asked question {n}; the agent answered it.",
        "user_id": "u1",
        "agent_id": "support",
        "conversation_id": "c1",
        "start_index": 2 * n,
        "end_index": 2 * n + 1,
        **extra,
    }


def _stored(memory: EpisodicMemory) -> list[str]:
    return sorted(
        r["short_summary_text"]
        for r in memory.store.read_recent(1000, user_id="u1", agent_id="support")
    )


class FlakyStore:
    """Makes the real store's writes fail `failures` times, optionally after writing."""

    def __init__(self, memory: EpisodicMemory, failures: int, *, after_write: bool = False) -> None:
        self.real = memory.store.memorize_many
        self.failures = failures
        self.after_write = after_write

    def __call__(self, episodes: Any, **kwargs: Any) -> list[str]:
        if self.failures:
            self.failures -= 1
            if self.after_write:  # stored, but the caller hears of a failure (a lost reply)
                self.real(episodes, **kwargs)
            raise EngineUnavailableError("connection reset")
        return self.real(episodes, **kwargs)


async def test_stored_at_once_when_the_store_works(memory: EpisodicMemory) -> None:
    recorder = EpisodeRecorder(memory)
    point = await recorder.record(**_episode(1))
    assert point is not None and _stored(memory) == ["question 1"]
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.write_failures) == (1, 0, 0)


async def test_failed_write_is_kept_and_retried_in_order(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = EpisodeRecorder(memory)
    monkeypatch.setattr(memory.store, "memorize_many", FlakyStore(memory, failures=2))
    assert await recorder.record(**_episode(1)) is None
    assert await recorder.record(**_episode(2)) is None
    assert recorder.stats().pending == 2 and _stored(memory) == []
    assert await recorder.record(**_episode(3)) is not None  # the store is back
    assert _stored(memory) == ["question 1", "question 2", "question 3"]
    stats = recorder.stats()
    assert (stats.recorded, stats.pending, stats.write_failures) == (3, 0, 2)


async def test_a_write_that_failed_late_is_not_stored_twice(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = EpisodeRecorder(memory)
    monkeypatch.setattr(memory.store, "memorize_many", FlakyStore(memory, 1, after_write=True))
    await recorder.record(**_episode(1))
    assert await recorder.flush() == 0
    assert _stored(memory) == ["question 1"]  # the retry replaced the point it wrote


async def test_episode_keeps_the_time_it_happened(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = EpisodeRecorder(memory)
    monkeypatch.setattr(memory.store, "memorize_many", FlakyStore(memory, failures=1))
    await recorder.record(**_episode(1))
    queued = recorder.stats()
    assert queued.pending == 1
    await recorder.flush()
    stored = memory.store.read_recent(1, user_id="u1", agent_id="support")[0]
    assert stored["timestamp_begin"] is not None


async def test_invalid_episode_is_rejected_not_raised(
    memory: EpisodicMemory, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = EpisodeRecorder(memory)
    with caplog.at_level(logging.ERROR):
        assert await recorder.record(**_episode(1, short_summary="   ")) is None
    stats = recorder.stats()
    assert (stats.rejected, stats.pending, stats.recorded) == (1, 0, 0)
    assert "rejected" in caplog.text and _stored(memory) == []


async def test_full_queue_drops_the_oldest_without_a_spill_file(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = EpisodeRecorder(memory, max_pending=2)
    monkeypatch.setattr(memory.store, "memorize_many", FlakyStore(memory, failures=3))
    with caplog.at_level(logging.ERROR):
        for n in (1, 2, 3):
            await recorder.record(**_episode(n))
    assert recorder.stats().dropped == 1 and "dropped" in caplog.text
    await recorder.flush()
    assert _stored(memory) == ["question 2", "question 3"]


async def test_spill_file_keeps_what_the_queue_cannot(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill = tmp_path / "spill" / "pending.jsonl"
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    monkeypatch.setattr(memory.store, "memorize_many", FlakyStore(memory, failures=4))
    for n in (1, 2, 3, 4):
        await recorder.record(**_episode(n))
    stats = recorder.stats()
    # Each failed write spills what waits (not only what the queue cannot hold), so a
    # process that ends before the store is back leaves all of it for the next recorder.
    assert (stats.pending, stats.spilled, stats.dropped) == (4, 4, 0)
    lines = spill.read_text().splitlines()
    assert [json.loads(line)["short_summary"] for line in lines] == [
        "question 1",
        "question 2",
        "question 3",
        "question 4",
    ]
    assert await recorder.flush() == 0
    assert _stored(memory) == ["question 1", "question 2", "question 3", "question 4"]
    assert not spill.exists()


async def test_torn_spill_line_does_not_block_the_rest(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spill = tmp_path / "pending.jsonl"
    recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
    monkeypatch.setattr(memory.store, "memorize_many", FlakyStore(memory, failures=2))
    await recorder.record(**_episode(1))
    await recorder.record(**_episode(2))
    with spill.open("a") as fh:
        fh.write('{"short_summary": "torn')  # a crash mid-append
    assert await recorder.flush() == 0
    assert _stored(memory) == ["question 1", "question 2"]


async def test_deferred_recording_is_drained_by_flush_and_aclose(memory: EpisodicMemory) -> None:
    recorder = EpisodeRecorder(memory, deferred=True)
    for n in range(5):
        assert await recorder.record(**_episode(n)) is None
    assert await recorder.aclose() == 0
    assert _stored(memory) == [f"question {n}" for n in range(5)]


def test_bad_settings_are_typed_errors(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match="max_pending"):
        EpisodeRecorder(memory, max_pending=0)
