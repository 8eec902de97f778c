"""A retriever's own options that every call would refuse are refused when it is made.

Before, `EpisodicRetriever(score_threshold=float("nan"))` (or `search_kwargs=
{"score_threshold": nan}`) was made, then every `invoke` raised `ValidationError` (a caller's
error, so never swallowed): every chain the retriever fed failed, at every call.
`score_threshold=True` was read as 1.0, above every fused score: a retriever that never
returned a document, while a call's `score_threshold=True` and `search_kwargs` refuse it.
`TaskEpisodeRetriever(search_options=...)` checked the option names only: a mode the store
lacks, a NaN threshold, a negative weight, both weights 0, `rrf_k=0` or a bad filter were
refused by the store at every call instead. Each is now a `ConfigurationError` when the
retriever is made, as the core's task strategies check their `search_kwargs`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from episodex import (
    ConfigurationError,
    EpisodicMemory,
    JSONLTaskStore,
    QdrantTaskStore,
    TaskStore,
    ValidationError,
)
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodicRetriever, TaskEpisodeRetriever

USER, AGENT = "u1", "support"


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    asyncio.run(
        mem.memorize_many(
            {
                "short_summary": f"Refund for order {i}",
                "long_summary": f"The user asked about the refund of order {i}.",
                "user_id": USER,
                "agent_id": AGENT,
                "conversation_id": f"c{i}",
            }
            for i in range(3)
        )
    )
    try:
        yield mem
    finally:
        mem.close()


@pytest.mark.parametrize(
    "options",
    [
        {"score_threshold": float("nan")},
        {"score_threshold": np.float64("nan")},
        {"score_threshold": "nan"},
        {"score_threshold": True},
        {"search_kwargs": {"score_threshold": float("nan")}},
        {
            "search_type": "similarity_score_threshold",
            "search_kwargs": {"score_threshold": np.float32("nan")},
        },
    ],
)
def test_a_threshold_every_call_refuses_is_refused_when_made(
    memory: EpisodicMemory, options: dict[str, Any]
) -> None:
    with pytest.raises(ConfigurationError, match="score_threshold must be a number"):
        EpisodicRetriever(memory=memory, user_id=USER, agent_id=AGENT, **options)
    # The same value given to a call is refused there, as before.
    retriever = EpisodicRetriever(memory=memory, user_id=USER, agent_id=AGENT)
    threshold = options.get(
        "score_threshold", options.get("search_kwargs", {}).get("score_threshold")
    )
    if not isinstance(threshold, str):
        with pytest.raises(ValidationError, match="score_threshold must be a number"):
            retriever.invoke("refund", score_threshold=threshold)


def test_thresholds_that_are_numbers_still_cut(memory: EpisodicMemory) -> None:
    ranked = EpisodicRetriever(memory=memory, user_id=USER, agent_id=AGENT, k=10).invoke("refund")
    assert len(ranked) == 3
    cut = float(ranked[1].metadata["score"])
    cases: list[dict[str, Any]] = [
        {"score_threshold": cut},
        {"score_threshold": np.float64(cut)},
        {"search_kwargs": {"score_threshold": cut}},
    ]
    for options in cases:
        retriever = EpisodicRetriever(memory=memory, user_id=USER, agent_id=AGENT, k=10, **options)
        assert [d.id for d in retriever.invoke("refund")] == [d.id for d in ranked[:2]]
    nothing = EpisodicRetriever(
        memory=memory, user_id=USER, agent_id=AGENT, score_threshold=float("inf")
    )
    assert nothing.invoke("refund") == []


BAD_SEARCH_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"score_threshold": float("nan")}, "score_threshold"),
    ({"score_threshold": "high"}, "score_threshold"),
    ({"filter": 5}, "filter must be a mapping"),
    ({"filter": {"": "u1"}}, "filter key"),
]
QDRANT_ONLY_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"mode": "sparse"}, "mode must be"),
    ({"dense_weight": -1}, "dense_weight"),
    ({"dense_weight": 0, "bm25_weight": 0}, "both 0"),
    ({"rrf_k": 0}, "rrf_k"),
]


@pytest.fixture(params=["qdrant", "jsonl"])
def task_store(
    request: pytest.FixtureRequest, memory: EpisodicMemory, tmp_path: Path
) -> Iterator[TaskStore]:
    if request.param == "qdrant":
        yield QdrantTaskStore(memory=memory)
    else:
        yield JSONLTaskStore(tmp_path / "tasks.jsonl")


def test_task_search_options_every_call_refuses_are_refused_when_made(
    task_store: TaskStore,
) -> None:
    cases = BAD_SEARCH_OPTIONS + (
        QDRANT_ONLY_OPTIONS if isinstance(task_store, QdrantTaskStore) else []
    )
    for options, message in cases:
        with pytest.raises(ConfigurationError, match=message):
            TaskEpisodeRetriever(store=task_store, search_options=options)
        # What the store refuses at a call: each call failed so before.
        with pytest.raises(ValidationError, match=message):
            asyncio.run(task_store.search("convert miles", 3, **options))


def test_task_search_options_the_store_takes_are_kept(task_store: TaskStore) -> None:
    options: dict[str, Any] = {"filter": {"user": "u1"}, "score_threshold": 0.0}
    if isinstance(task_store, QdrantTaskStore):
        options |= {"mode": "bm25", "dense_weight": 0, "bm25_weight": 1, "rrf_k": 5}
    retriever = TaskEpisodeRetriever(store=task_store, search_options=options)
    assert retriever.search_options == options
    assert retriever.invoke("convert miles to km") == []
    # A call's filter still narrows the retriever's.
    assert retriever.invoke("convert miles to km", filter={"lang": "en"}) == []
