"""The LangChain adapter's number options take numpy numbers, as the core's do.

`EpisodexStore(dense_weight=np.float32(0.3))`, `user_position=np.int64(1)`, a retriever's
`invoke(query, k=np.int64(2))`, `create_memory_search_tool(k=np.int64(2))` and
`EpisodicMemoryMiddleware(max_tokens=np.int64(200))` were checked as `int | float` or `int`,
so a number a numpy computation gave was refused where the same Python number was taken.
Each now takes `numbers.Real` / `numbers.Integral` (never a bool) and keeps the Python number.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from episodex import ConfigurationError, EpisodicMemory, run_sync
from langchain_episodex import (
    EpisodexStore,
    EpisodicMemoryMiddleware,
    EpisodicRetriever,
    create_memory_search_tool,
)


def test_the_store_takes_numpy_weights_and_user_position(memory: EpisodicMemory) -> None:
    store = EpisodexStore(
        memory,
        dense_weight=np.float32(0.25),  # pyright: ignore[reportArgumentType]
        bm25_weight=np.float64(0.75),
        user_position=np.int64(1),  # pyright: ignore[reportArgumentType]
    )
    assert (store.dense_weight, store.bm25_weight, store.user_position) == (0.25, 0.75, 1)
    assert type(store.dense_weight) is float and type(store.user_position) is int
    user = f"user-{uuid.uuid4().hex}"
    store.put(("memories", user), "diet", {"text": "Alice is vegetarian."})
    hits = store.search(("memories", user), query="what does she eat?")
    assert [hit.key for hit in hits] == ["diet"]


def test_the_store_still_refuses_bools_and_bad_numbers(memory: EpisodicMemory) -> None:
    options: dict[str, Any]
    for options in (
        {"dense_weight": np.float32("nan")},
        {"bm25_weight": np.float64(-1.0)},
        {"user_position": True},
        {"user_position": np.int64(-1)},
        {"dense_weight": True},
    ):
        with pytest.raises(ConfigurationError):
            EpisodexStore(memory, **options)


def test_the_retriever_and_the_search_tool_take_a_numpy_k(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    for n in range(3):
        run_sync(
            memory.memorize(
                short_summary=f"Refund {n} was sent.",
                long_summary=f"The user asked about refund {n}; it was sent.",
                user_id=user,
                agent_id="support",
                conversation_id=f"c{n}",
            )
        )
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id="support")
    assert len(retriever.invoke("refund", k=np.int64(2))) == 2
    tool = create_memory_search_tool(memory, user_id=user, agent_id="support", k=np.int64(2))  # pyright: ignore[reportArgumentType]
    assert "Refund" in tool.invoke({"query": "refund"})


def test_the_middleware_takes_a_numpy_max_tokens(memory: EpisodicMemory) -> None:
    middleware = EpisodicMemoryMiddleware(memory, max_tokens=np.int64(200))  # pyright: ignore[reportArgumentType]
    assert middleware.max_tokens == 200 and type(middleware.max_tokens) is int
