"""One script of memory operations, the same answers on Qdrant Edge and on every other backend.

Users move a memory from the embedded engine to a Qdrant server to scale, so every operation
of `EpisodicMemory` must answer alike there: the same episodes in the same order, the same
scores and stream ranks, the same errors. Each test runs one sequence on Qdrant Edge and on
each other registered backend and compares what a user would see.

`stats` ranked flows and tools used equally often, and ordered episodes that ended at the same
moment for the sentiment trend, in the order the engine scrolled them (Qdrant Edge by write
order, qdrant-client its own way): one store reported other top flows, or another trend, after
the move. Equal counts are now ranked by name and equal end times by point id.
"""

from __future__ import annotations

import io
import json
import math
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from episodex import Embedder, EpisodicMemory
from episodex.testing import HashEmbedder

from .backends import BACKENDS, drop_server_collections, engine_options

U, A = "user-1", "agent-1"
T0 = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
#: (conversation, speakers, short summary, long summary); every text a different length, so
#: no two episodes tie in a stream and the order is each engine's to get right.
TEXTS: list[tuple[str, list[str], str, str]] = [
    (
        "c1",
        ["Caroline", "Melanie"],
        "Caroline went to a support group",
        "Caroline told Melanie about the LGBTQ support group meeting she went to in May 2023.",
    ),
    ("c1", ["Melanie"], "Melanie painted a sunrise", "Melanie painted a sunrise over the lake."),
    (
        "c2",
        ["Melanie"],
        "Melanie ran a charity race for mental health",
        "Melanie ran a charity race for mental health on a rainy Saturday morning.",
    ),
    (
        "c2",
        ["Jo Ann", "Melanie"],
        "Jo Ann joined the race",
        "Jo Ann ran with Melanie and talked about her new pottery class.",
    ),
    (
        "c3",
        ["Caroline"],
        "Caroline researched adoption agencies",
        "Caroline looked into adoption agencies in July 2022 to build a family.",
    ),
    ("c3", [], "A meeting", "Someone described a support group meeting downtown."),
    (
        "c4",
        ["Dr. Ann Smith"],
        "Refund for order 1234",
        "User asked for a refund for order 1234; the agent issued it the same day.",
    ),
    ("c4", ["user"], "Order 1234 shipped", "The order 1234 shipped on 9 May, 2023."),
]
QUERIES = [
    "support group",
    "When did Melanie run a race?",
    "refund for order 1234",
    "what happened in May 2023?",
    "on 9 May, 2023",
    "what did Smith say about the refund",
]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"with_stream_ranks": False},
    {"conversation_diversity": 0.0},
    {"conversation_diversity": 0.5},
    {"previous_conversation_limit": 2, "same_conversation_limit": 1},
    {"previous_conversation_limit": 0},
    {"seen_from": 0, "seen_until": 3},
    {"seen_from": 2},
    {"stage1_limit": 2},
    {"rrf_k": 1, "dated_weight": 0, "speaker_weight": 0, "speaker_bm25_weight": 0},
    {"short_weight": 0, "long_weight": 0, "bm25_weight": 1.0, "splade_weight": 0},
]
BAD_OPTIONS: list[dict[str, Any]] = [
    {"seen_from": 3, "seen_until": 1},
    {"stage1_limit": 0},
    {"previous_limit": 1},
    {"bm25_weight": -1},
    {"conversation_diversity": 1.0},
    {"with_stream_ranks": 1},
    {name: 0 for name in ("short_weight", "long_weight", "bm25_weight")}
    | {name: 0 for name in ("splade_weight", "splade_short_weight", "dated_weight")}
    | {"speaker_weight": 0, "speaker_bm25_weight": 0},
]


def pid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, (conversation, speakers, short, long) in enumerate(TEXTS):
        begin = T0 + timedelta(days=30 * n - 120)
        out.append(
            {
                "point_id": pid(n),
                "user_id": U,
                "agent_id": A,
                "conversation_id": conversation,
                "short_summary": short,
                "long_summary": long,
                "start_index": 2 * n,
                "end_index": 2 * n + 2,
                "speakers": speakers,
                "flows_activated": [f"flow-{n % 3}"],
                "tools_invoked": [f"tool-{n % 2}"],
                "timestamp_begin": begin,
                "timestamp_end": begin + timedelta(hours=1),
                "average_user_sentiment": n / 10,
            }
        )
    return out


def comparable(value: Any) -> Any:
    """What a user compares: dates as text, the write time (`created_at`) left out."""
    if isinstance(value, dict):
        fields = cast(dict[str, Any], value)
        return {k: comparable(v) for k, v in fields.items() if k != "created_at"}
    if isinstance(value, list | tuple):
        return [comparable(v) for v in cast(list[Any], value)]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def same(mine: Any, theirs: Any) -> bool:
    """Equal, floats within 1e-4 of each other (each engine sums in its own float order)."""
    if isinstance(mine, float) and isinstance(theirs, float):
        return math.isclose(mine, theirs, rel_tol=1e-4, abs_tol=1e-6)
    if isinstance(mine, dict) and isinstance(theirs, dict):
        left, right = cast(dict[str, Any], mine), cast(dict[str, Any], theirs)
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(mine, list) and isinstance(theirs, list):
        left_, right_ = cast(list[Any], mine), cast(list[Any], theirs)
        return len(left_) == len(right_) and all(
            same(a, b) for a, b in zip(left_, right_, strict=True)
        )
    return mine == theirs


Outcome = tuple[str, Any]


async def outcome(call: Awaitable[Any]) -> Outcome:
    """`("ok", answer)`, or `("error", (type name, message))`: an error is an answer too."""
    try:
        found = await call
    except Exception as exc:
        return "error", (type(exc).__name__, str(exc))
    return "ok", found


async def script(mem: EpisodicMemory) -> list[tuple[str, Outcome]]:
    """Every operation of the memory, in one order; what each answered."""
    log: list[tuple[str, Outcome]] = []

    async def run(name: str, call: Callable[[], Awaitable[Any]]) -> None:
        log.append((name, await outcome(call())))

    good = records()
    await run("memorize_many", lambda: mem.memorize_many(good))
    blank = [good[0] | {"point_id": pid(50)}, good[1] | {"short_summary": " "}]
    await run("memorize_many, a blank summary", lambda: mem.memorize_many(blank))
    await run(
        "memorize_many, another user's id",
        lambda: mem.memorize_many([good[0] | {"user_id": "someone-else"}]),
    )
    await run("memorize_many, a bad id", lambda: mem.memorize_many([good[0] | {"point_id": "p-1"}]))
    await run(
        "memorize, a negative index",
        lambda: mem.memorize(
            short_summary="x", long_summary="y", user_id=U, agent_id=A,
            conversation_id="c9", end_index=-1,
        ),
    )  # fmt: skip
    await run("count", lambda: mem.count(user_id=U, agent_id=A))
    for query in QUERIES:
        for conversation in (None, "c4"):
            for options in OPTIONS:
                await run(
                    f"recall {query!r} in {conversation} with {options}",
                    lambda q=query, c=conversation, o=options: mem.recall(
                        user_id=U, agent_id=A, query=q, conversation_id=c, **o
                    ),
                )
    for options in BAD_OPTIONS:
        await run(
            f"recall with {options}",
            lambda o=options: mem.recall(user_id=U, agent_id=A, query="race", **o),
        )
    await run("recall of no text", lambda: mem.recall(user_id=U, agent_id=A, query=" "))
    for tokens in (None, 0, 40, 200):
        await run(
            f"recall_block of {tokens} tokens",
            lambda t=tokens: mem.recall_block(
                user_id=U, agent_id=A, query="Melanie", conversation_id="c1", max_tokens=t
            ),
        )
    for n in (0, 1, 3, 100):
        for conversation in (None, "c2"):
            await run(
                f"read_recent {n} of {conversation}",
                lambda n=n, c=conversation: mem.read_recent(
                    n, user_id=U, agent_id=A, conversation_id=c
                ),
            )
    await run("read_recent -1", lambda: mem.read_recent(-1, user_id=U, agent_id=A))
    await run("stats", lambda: mem.stats(user_id=U, agent_id=A))
    await run("stats top 1", lambda: mem.stats(user_id=U, agent_id=A, top=1))
    await run("stats top 0", lambda: mem.stats(user_id=U, agent_id=A, top=0))
    await run("exported lines", lambda: exported(mem))
    await run("get", lambda: mem.get(pid(2), user_id=U, agent_id=A))
    await run("get, none such", lambda: mem.get(pid(77), user_id=U, agent_id=A))
    await run("get, another user", lambda: mem.get(pid(2), user_id="u2", agent_id=A))
    await run("forget one", lambda: mem.forget(user_id=U, agent_id=A, point_id=pid(1)))
    await run("forget it again", lambda: mem.forget(user_id=U, agent_id=A, point_id=pid(1)))
    await run(
        "forget by upper-case id",
        lambda: mem.forget(user_id=U, agent_id=A, point_id=pid(2).upper()),
    )
    await run("forget c2", lambda: mem.forget(user_id=U, agent_id=A, conversation_id="c2"))
    await run("forget nothing named", lambda: mem.forget(user_id=U, agent_id=A))
    await run("count after", lambda: mem.count(user_id=U, agent_id=A))
    await run("reindex", lambda: mem.reindex())
    await run("recall after reindex", lambda: mem.recall(user_id=U, agent_id=A, query="refund"))
    await run("forget everything", lambda: mem.forget(user_id=U, agent_id=A, everything=True))
    await run("count at the end", lambda: mem.count(user_id=U, agent_id=A))
    await run("recall at the end", lambda: mem.recall(user_id=U, agent_id=A, query="refund"))
    await run("stats at the end", lambda: mem.stats(user_id=U, agent_id=A))
    return log


async def exported(mem: EpisodicMemory) -> list[str]:
    out = io.StringIO()
    await mem.export(out, user_id=U, agent_id=A)
    return sorted(
        json.dumps(comparable(json.loads(line)), sort_keys=True)
        for line in out.getvalue().splitlines()
    )


@pytest.fixture(params=[b for b in BACKENDS if b != "edge"])
def other(request: pytest.FixtureRequest) -> str:
    return request.param


async def opened(
    backend: str, folder: Path, embedder: Embedder, *, splade: bool = True
) -> EpisodicMemory:
    path, options = engine_options(backend, folder)
    return EpisodicMemory(path, embedder=embedder, splade=splade, **options)


async def answers(
    backend: str, folder: Path, embedder: Embedder, play: Callable[[EpisodicMemory], Awaitable[Any]]
) -> Any:
    mem = await opened(backend, folder, embedder)
    try:
        return await play(mem)
    finally:
        drop_server_collections(mem.engine)
        await mem.aclose()


async def test_every_operation_answers_alike_on_every_backend(
    tmp_path: Path, embedder: Embedder, other: str
) -> None:
    edge = await answers("edge", tmp_path, embedder, script)
    theirs = await answers(other, tmp_path, embedder, script)
    assert [name for name, _ in edge] == [name for name, _ in theirs]
    differ = [
        (name, mine, their)
        for (name, mine), (_, their) in zip(edge, theirs, strict=True)
        if not same(comparable(mine), comparable(their))
    ]
    assert not differ, f"{other} answers differently from edge: {differ[:3]}"
    # The script reached what it means to test: recalls found episodes, bad input was refused.
    found = dict(edge)
    assert found["count"] == ("ok", len(TEXTS))
    assert found["memorize_many, a blank summary"][0] == "error"
    assert found["count after"] == ("ok", len(TEXTS) - 3)
    assert found["recall 'support group' in None with {}"][1]["previous_conversations"]


async def tied_stats(mem: EpisodicMemory) -> dict[str, Any]:
    """Stats over flows and tools used equally often, by episodes that ended together."""
    end = T0 + timedelta(hours=1)
    await mem.memorize_many(
        [
            {
                "point_id": pid(n),
                "user_id": U,
                "agent_id": A,
                "conversation_id": f"c{n}",
                "short_summary": f"episode {n}",
                "long_summary": f"the episode numbered {n}",
                "flows_activated": [flow],
                "tools_invoked": [tool],
                "timestamp_begin": T0,
                "timestamp_end": end,
                "average_user_sentiment": sentiment,
            }
            # Written in an order neither by name nor by id, so no engine's own order is it.
            for n, flow, tool, sentiment in [
                (2, "refund", "lookup", 0.9),
                (0, "billing", "crm", -0.9),
                (3, "shipping", "mailer", 0.0),
                (1, "account", "search", 0.5),
            ]
        ]
    )
    return await mem.stats(user_id=U, agent_id=A, top=2)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_stats_rank_equal_counts_by_name_and_equal_ends_by_id(
    tmp_path: Path, backend: str
) -> None:
    found = await answers(backend, tmp_path, HashEmbedder(), tied_stats)
    assert found["top_flows"] == [("account", 1), ("billing", 1)]
    assert found["top_tools"] == [("crm", 1), ("lookup", 1)]
    # In point-id order the sentiments are -0.9, 0.5, 0.9, 0.0: the least-squares slope.
    assert found["sentiment_trend"] == pytest.approx(0.31)
    assert found["sentiment_direction"] == "improving"
