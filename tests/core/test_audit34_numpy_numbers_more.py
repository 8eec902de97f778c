"""numpy numbers are taken in the paths dbc2566 left with `int | float` / `int` checks.

Lesson ranking options, the episode's counts and sentiments, token budgets, `limit`s and the
other integer options, engine plan conditions, task filters and the server engine's timeout
refused a numpy float32 or int64 ("must be a number", "must be an integer") that was equal to
a number they took. Bools, NaN and infinities are still refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from episodex import (
    ConfigurationError,
    EpisodicMemory,
    JSONLTaskStore,
    StepLessonMemory,
    ValidationError,
)
from episodex._engines.qdrant import QdrantClientEngine
from episodex.plan import Match, MatchAny, Range
from episodex.testing import HashEmbedder


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    yield mem
    mem.close()


async def test_episode_counts_and_sentiment_take_numpy_numbers(memory: EpisodicMemory) -> None:
    point_id = await memory.memorize(
        short_summary="refund for order 12",
        long_summary="The user asked for a refund of order 12.",
        user_id="u",
        agent_id="a",
        conversation_id="c",
        start_index=np.int64(2),  # pyright: ignore[reportArgumentType]
        end_index=np.int64(5),  # pyright: ignore[reportArgumentType]
        average_user_sentiment=np.float32(0.5),  # pyright: ignore[reportArgumentType]
    )
    stored = await memory.get(point_id, user_id="u", agent_id="a")
    assert (stored["start_index"], stored["end_index"]) == (2, 5)
    assert stored["average_user_sentiment"] == 0.5
    with pytest.raises(ValidationError):
        await memory.memorize(
            short_summary="s",
            long_summary="l",
            user_id="u",
            agent_id="a",
            conversation_id="c",
            average_user_sentiment=np.float32("nan"),  # pyright: ignore[reportArgumentType]
        )


async def test_integer_options_and_budgets_take_numpy_ints(memory: EpisodicMemory) -> None:
    block = await memory.recall_block(
        user_id="u",
        agent_id="a",
        query="refund",
        max_tokens=np.int64(300),  # pyright: ignore[reportArgumentType]
    )
    assert isinstance(block, str)
    stats = await memory.stats(user_id="u", agent_id="a", top=np.int64(3))  # pyright: ignore[reportArgumentType]
    assert stats is not None
    with pytest.raises(ValidationError):
        await memory.recall_block(user_id="u", agent_id="a", query="q", max_tokens=True)  # pyright: ignore[reportArgumentType]


def test_lesson_options_take_numpy_numbers(memory: EpisodicMemory) -> None:
    lessons = StepLessonMemory(
        memory.engine,
        HashEmbedder(),
        env_threshold=np.float32(0.5),  # pyright: ignore[reportArgumentType]
        top_k=np.int64(4),  # pyright: ignore[reportArgumentType]
        final_k=np.int64(1),  # pyright: ignore[reportArgumentType]
    )
    assert lessons.defaults["env_threshold"] == 0.5
    assert (lessons.defaults["top_k"], lessons.defaults["final_k"]) == (4, 1)
    assert type(lessons.defaults["top_k"]) is int
    with pytest.raises(ValidationError):
        StepLessonMemory(memory.engine, HashEmbedder(), env_threshold=np.float32("inf"))  # pyright: ignore[reportArgumentType]


def test_plan_conditions_take_numpy_numbers() -> None:
    assert Range("n", gt=np.float32(1.5)) == Range("n", gt=1.5)  # pyright: ignore[reportArgumentType]
    assert type(Range("n", lte=np.float32(2.0)).lte) is float  # pyright: ignore[reportArgumentType]
    assert Match("n", np.int64(5)) == Match("n", 5)  # pyright: ignore[reportArgumentType]
    assert type(Match("n", np.int64(5)).value) is int  # pyright: ignore[reportArgumentType]
    assert MatchAny("n", (np.int64(1), np.int64(2))).values == (1, 2)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError):
        Range("n", gt=np.float32("nan"))  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError):
        Range("n", gt=True)  # pyright: ignore[reportArgumentType]


async def test_task_filter_takes_a_numpy_int(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    found = await store.search("anything", filter={"n": np.int64(5)})  # pyright: ignore[reportArgumentType]
    assert found == []


def test_server_engine_timeout_takes_a_numpy_float() -> None:
    engine = QdrantClientEngine(url=None, location=":memory:", timeout=np.float32(2.5))  # pyright: ignore[reportArgumentType]
    try:
        assert engine.kind == "memory"
    finally:
        engine.close()
    # The same checks as for a float: a numpy value that is no timeout is still refused.
    for wrong in (np.float32(0.0), np.float32(-1.0), np.float32("nan")):
        with pytest.raises(ConfigurationError, match="timeout must be a positive number"):
            QdrantClientEngine(url=None, location=":memory:", timeout=wrong)  # pyright: ignore[reportArgumentType]
