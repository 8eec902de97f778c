"""Any query text recalls, or is refused with a `ValidationError`, alike on every engine.

Generated queries mix words that name periods and speakers ("in May 2023", "Caroline"),
control and zero-width characters, combining marks, emoji and filter-like words. Each must
recall (or be refused by name, never a raw error) under each weighting of the streams, and the
embedded engine and qdrant-client `:memory:` must recall the same episodes in the same order:
with the bundled models, many such queries leave two episodes with one fused score, which the
engines used to order each their own way.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError, default_embedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WORDS = [
    *("in", "on", "May", "2023", "winter", "Caroline", "mel", "the", "of", "9th", "-", ","),
    *("1999", "2099", "1900", "0", "31", "February", "feb.", "SEPT", "AND", "OR", ":", "*"),
    *("\x00", "\x1b", "\u200b", "\u202e", "\U0001f600", "\u0301", "\u3000"),
]
QUERIES = st.one_of(
    st.text(min_size=1, max_size=60),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=10).map(" ".join),
    st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=4)), max_size=10).map("".join),
)
ZERO = {f"{name}_weight": 0.0 for name in ("short", "long", "bm25", "splade", "splade_short")}
WEIGHTS: list[dict[str, Any]] = [
    {},
    ZERO | {"bm25_weight": 1.0},
    ZERO | {"splade_weight": 1.0},
    ZERO | {"short_weight": 1.0, "dated_weight": 5.0},
]
EPISODES = [
    ("refund for order 1234", "Caroline", datetime(2023, 5, 9)),  # naive: UTC
    (
        "trip to Paris",
        "Mel Gibson",
        datetime(2022, 12, 31, 23, tzinfo=timezone(timedelta(hours=-10))),
    ),
    ("skiing", "user", datetime(1999, 1, 1, tzinfo=UTC)),
]


@pytest.fixture(scope="module")
def memories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[EpisodicMemory]]:
    embedder = default_embedder()
    folder: Path = tmp_path_factory.mktemp("edge")
    mems = [
        EpisodicMemory(folder, embedder=embedder),
        EpisodicMemory(location=":memory:", embedder=embedder),
    ]
    try:
        for mem in mems:
            mem.store.memorize_many(
                [
                    {
                        "short_summary": text,
                        "long_summary": f"{text}, told by {speaker}",
                        "user_id": "u",
                        "agent_id": "a",
                        "conversation_id": f"c{i}",
                        "speakers": [speaker],
                        "timestamp_begin": when,
                        "point_id": f"00000000-0000-4000-8000-00000000000{i}",
                    }
                    for i, (text, speaker, when) in enumerate(EPISODES)
                ]
            )
        yield mems
    finally:
        for mem in mems:
            mem.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=QUERIES, weights=st.sampled_from(WEIGHTS))
def test_any_query_recalls_alike_or_is_refused(
    memories: list[EpisodicMemory], query: str, weights: dict[str, Any]
) -> None:
    answers: list[object] = []
    for mem in memories:
        try:
            found = mem.store.recall(
                user_id="u", agent_id="a", query=query, with_stream_ranks=False, **weights
            )
        except ValidationError:
            answers.append("refused")
            continue
        answers.append([e["point_id"] for e in found["previous_conversations"]])
    assert answers[0] == answers[1], (query, weights, answers)
