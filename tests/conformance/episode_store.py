"""The behaviours every episode-store backend must show, as one abstract test class.

Subclass `EpisodeStoreConformance` and provide a `memory` fixture that yields an empty
`EpisodicMemory` on your backend (see test_backends.py): every test here then runs on it.
"""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from episodex import (
    EpisodicMemory,
    ImportFileError,
    NotFoundError,
    ValidationError,
)
from episodex.plan import CollectionSpec

U, A = "user-1", "agent-1"
T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def ep(
    short: str,
    long: str | None = None,
    *,
    user: str = U,
    agent: str = A,
    conv: str = "c1",
    day: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "short_summary": short,
        "long_summary": long or f"In detail: {short}",
        "user_id": user,
        "agent_id": agent,
        "conversation_id": conv,
        "timestamp_begin": T0 + timedelta(days=day),
        "timestamp_end": T0 + timedelta(days=day, minutes=10),
        **extra,
    }


CORPUS = [
    ep(
        "Password reset email never arrived",
        "The user requested a password reset twice; the email was stuck in spam.",
        conv="c1",
        day=0,
        flows_activated=["login_help"],
        tools_invoked=["resend_email"],
        average_user_sentiment=-0.5,
    ),
    ep(
        "Refund issued for damaged blender order 4471",
        "Order 4471 arrived broken; the agent issued a full refund to the card.",
        conv="c2",
        day=3,
        flows_activated=["refund"],
        tools_invoked=["lookup_order", "issue_refund"],
        average_user_sentiment=-0.1,
    ),
    ep(
        "Changed delivery address for order 8812",
        "The user moved house and asked to ship order 8812 to the new address.",
        conv="c3",
        day=7,
        flows_activated=["shipping"],
        tools_invoked=["lookup_order", "update_address"],
        average_user_sentiment=0.4,
    ),
    ep(
        "Asked about the loyalty points balance",
        "The user wanted to know how many loyalty points they had and how to redeem them.",
        conv="c3",
        day=7,
        flows_activated=["loyalty"],
        tools_invoked=["points_balance"],
        average_user_sentiment=0.6,
    ),
]


def reference_rrf(ranks: dict[str, int], weights: dict[str, float], k: int) -> float:
    """Textbook weighted RRF: each stream adds weight / (k + rank), ranks from 1."""
    return sum(weights[s] / (k + rank) for s, rank in ranks.items() if weights[s] > 0)


class EpisodeStoreConformance:
    """Behaviours of conversation-episode memory that every backend must show."""

    @pytest.fixture
    async def loaded(self, memory: EpisodicMemory) -> list[str]:
        other = [
            ep("Password reset email never arrived for the other user", user="user-2", conv="c1"),
            ep("Password reset email never arrived for another agent", agent="agent-2", conv="c1"),
        ]
        ids = await memory.memorize_many(CORPUS + other)
        return ids[: len(CORPUS)]

    # -- memorize and get ------------------------------------------------------------------

    async def test_memorize_returns_uuid_and_get_returns_every_field(
        self, memory: EpisodicMemory
    ) -> None:
        meta = {"nested": {"a": [1, 2.5, None, True, "x"]}, "ünïcode": "✓"}
        pid = await memory.memorize(
            short_summary="s",
            long_summary="l",
            user_id=U,
            agent_id=A,
            conversation_id="c1",
            start_index=3,
            end_index=9,
            overlap=2,
            flows_activated=["f"],
            tools_invoked=["t1", "t2"],
            timestamp_begin=T0,
            timestamp_end=T0 + timedelta(minutes=5),
            average_user_sentiment=-0.5,
            user_sentiment_variance=0.1,
            metadata=meta,
        )
        assert uuid.UUID(pid)
        got = await memory.get(pid, user_id=U, agent_id=A)
        assert got["point_id"] == pid
        assert got["short_summary_text"] == "s" and got["long_summary_text"] == "l"
        assert (got["start_index"], got["end_index"], got["overlap"]) == (3, 9, 2)
        assert got["flows_activated"] == ["f"] and got["tools_invoked"] == ["t1", "t2"]
        assert got["timestamp_begin"] == T0 and got["timestamp_end"] == T0 + timedelta(minutes=5)
        assert got["average_user_sentiment"] == -0.5 and got["user_sentiment_variance"] == 0.1
        assert got["metadata"] == meta

    async def test_only_summaries_and_ids_are_required(self, memory: EpisodicMemory) -> None:
        before = datetime.now(UTC)
        pid = await memory.memorize(
            short_summary="s", long_summary="l", user_id=U, agent_id=A, conversation_id="c"
        )
        got = await memory.get(pid, user_id=U, agent_id=A)
        assert before - timedelta(seconds=1) <= got["timestamp_begin"] <= datetime.now(UTC)
        assert got["timestamp_end"] == got["timestamp_begin"]
        assert (got["start_index"], got["end_index"], got["overlap"]) == (0, 0, 0)
        assert got["flows_activated"] == [] and got["tools_invoked"] == [] and got["metadata"] == {}
        assert got["average_user_sentiment"] is None

    async def test_memorize_with_existing_point_id_replaces(self, memory: EpisodicMemory) -> None:
        pid = str(uuid.uuid4())
        await memory.memorize(
            short_summary="old",
            long_summary="l",
            user_id=U,
            agent_id=A,
            conversation_id="c",
            point_id=pid,
        )
        await memory.memorize(
            short_summary="new",
            long_summary="l",
            user_id=U,
            agent_id=A,
            conversation_id="c",
            point_id=pid,
        )
        assert await memory.count(user_id=U, agent_id=A) == 1
        assert (await memory.get(pid, user_id=U, agent_id=A))["short_summary_text"] == "new"

    async def test_memorize_many_keeps_order(self, memory: EpisodicMemory) -> None:
        ids = await memory.memorize_many(CORPUS)
        assert len(ids) == len(set(ids)) == len(CORPUS)
        for pid, src in zip(ids, CORPUS, strict=True):
            assert (await memory.get(pid, user_id=U, agent_id=A))["short_summary_text"] == src[
                "short_summary"
            ]

    async def test_get_of_another_tenant_is_not_found(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        with pytest.raises(NotFoundError):
            await memory.get(loaded[0], user_id="user-2", agent_id=A)
        with pytest.raises(NotFoundError):
            await memory.get(loaded[0], user_id=U, agent_id="agent-2")
        with pytest.raises(NotFoundError):
            await memory.get(str(uuid.uuid4()), user_id=U, agent_id=A)

    # -- recall ----------------------------------------------------------------------------

    async def test_recall_splits_by_conversation_best_first(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        res = await memory.recall(
            user_id=U,
            agent_id=A,
            conversation_id="c3",
            query="where is my order going to be shipped",
        )
        same, prev = res["same_conversation"], res["previous_conversations"]
        assert {i["conversation_id"] for i in same} == {"c3"}
        assert {i["conversation_id"] for i in prev} <= {"c1", "c2"} and prev
        for items in (same, prev):
            scores = [i["score"] for i in items]
            assert scores == sorted(scores, reverse=True)
        assert same[0]["short_summary_text"] == "Changed delivery address for order 8812"

    async def test_recall_items_carry_fields_and_stream_ranks(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        res = await memory.recall(
            user_id=U, agent_id=A, conversation_id="c9", query="password reset email"
        )
        top = res["previous_conversations"][0]
        assert top["point_id"] == loaded[0]
        for key in (
            "score",
            "short_summary_text",
            "long_summary_text",
            "user_id",
            "agent_id",
            "conversation_id",
            "start_index",
            "end_index",
            "overlap",
            "flows_activated",
            "tools_invoked",
            "timestamp_begin",
            "timestamp_end",
            "average_user_sentiment",
            "user_sentiment_variance",
            "metadata",
        ):
            assert key in top
        assert set(top["streams"]) == {"short", "long", "bm25", "splade", "splade_short"}
        assert all(v["rank"] == 1 for v in top["streams"].values())

    async def test_fused_score_is_weighted_rrf_of_stream_ranks(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        weights = {"short": 0.2, "long": 0.3, "bm25": 0.5, "splade": 0.4, "splade_short": 0.1}
        res = await memory.recall(
            user_id=U,
            agent_id=A,
            query="order refund address",
            rrf_k=10,
            short_weight=weights["short"],
            long_weight=weights["long"],
            bm25_weight=weights["bm25"],
            splade_weight=weights["splade"],
            splade_short_weight=weights["splade_short"],
            conversation_diversity=0,
        )
        items = res["previous_conversations"]
        assert len(items) == len(CORPUS)
        for item in items:
            ranks = {s: v["rank"] for s, v in item["streams"].items()}
            assert item["score"] == pytest.approx(reference_rrf(ranks, weights, 10), rel=1e-4)

    async def test_recall_without_stream_ranks_returns_the_same_hits(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        args: dict[str, Any] = {
            "user_id": U,
            "agent_id": A,
            "conversation_id": "c3",
            "query": "order address refund",
        }
        full = await memory.recall(**args)
        lean = await memory.recall(**args, with_stream_ranks=False)
        for side in ("same_conversation", "previous_conversations"):
            assert [(i["point_id"], i["score"]) for i in lean[side]] == [
                (i["point_id"], i["score"]) for i in full[side]
            ]
            assert all("streams" not in i for i in lean[side]) and all(
                i["streams"] for i in full[side]
            )

    async def test_default_weights_lean_on_the_sparse_streams(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        res = await memory.recall(user_id=U, agent_id=A, query="order refund address")
        # The documented defaults (README, "Recall"): chosen on the LoCoMo dev split. The
        # previous-conversations list discounts a conversation's later episodes by 3% each.
        weights = {"short": 0.05, "long": 0.05, "bm25": 0.3, "splade": 0.2, "splade_short": 0.2}
        shown: dict[str, int] = {}
        items = res["previous_conversations"]
        for item in items:
            ranks = {s: v["rank"] for s, v in item["streams"].items()}
            before = shown.get(item["conversation_id"], 0)
            fused = reference_rrf(ranks, weights, 20)
            assert item["score"] == pytest.approx(fused * 0.97**before, rel=1e-4)
            shown[item["conversation_id"]] = before + 1
        assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)

    async def test_recall_never_crosses_user_or_agent(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        for user, agent in ((U, A), ("user-2", A), (U, "agent-2")):
            res = await memory.recall(
                user_id=user,
                agent_id=agent,
                conversation_id="c1",
                query="password reset email never arrived",
            )
            items = res["same_conversation"] + res["previous_conversations"]
            assert items
            assert {(i["user_id"], i["agent_id"]) for i in items} == {(user, agent)}
        res = await memory.recall(user_id="nobody", agent_id=A, query="password")
        assert res == {"same_conversation": [], "previous_conversations": []}

    async def test_bm25_only_finds_exact_identifiers(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        res = await memory.recall(
            user_id=U,
            agent_id=A,
            query="8812",
            short_weight=0,
            long_weight=0,
            bm25_weight=1,
            splade_weight=0,
            splade_short_weight=0,
        )
        items = res["previous_conversations"]
        assert [i["short_summary_text"] for i in items] == [
            "Changed delivery address for order 8812"
        ]
        assert set(items[0]["streams"]) == {"bm25"}

    async def test_dense_only_recall_uses_only_dense_streams(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        res = await memory.recall(
            user_id=U,
            agent_id=A,
            query="money back for a broken kitchen appliance",
            bm25_weight=0,
            splade_weight=0,
            splade_short_weight=0,
        )
        top = res["previous_conversations"][0]
        assert top["short_summary_text"].startswith("Refund issued")
        assert set(top["streams"]) <= {"short", "long"}

    async def test_recall_limits(self, memory: EpisodicMemory, loaded: list[str]) -> None:
        res = await memory.recall(
            user_id=U,
            agent_id=A,
            conversation_id="c3",
            query="order",
            same_conversation_limit=1,
            previous_conversation_limit=1,
        )
        assert len(res["same_conversation"]) == 1 and len(res["previous_conversations"]) == 1
        res = await memory.recall(
            user_id=U,
            agent_id=A,
            conversation_id="c3",
            query="order",
            same_conversation_limit=0,
            previous_conversation_limit=0,
        )
        assert res == {"same_conversation": [], "previous_conversations": []}
        res = await memory.recall(user_id=U, agent_id=A, query="order", stage1_limit=1)
        assert all(
            v["rank"] == 1 for i in res["previous_conversations"] for v in i["streams"].values()
        )

    async def test_recall_without_conversation_puts_everything_in_previous(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        res = await memory.recall(user_id=U, agent_id=A, query="order")
        assert res["same_conversation"] == []
        assert len(res["previous_conversations"]) == len(CORPUS)

    @pytest.mark.parametrize(
        "bad",
        [
            {"query": ""},
            {"query": "   "},
            {"user_id": ""},
            {"agent_id": None},
            {"previous_conversation_limit": -1},
            {"stage1_limit": 0},
            {"rrf_k": 0},
            {
                "short_weight": 0,
                "long_weight": 0,
                "bm25_weight": 0,
                "splade_weight": 0,
                "splade_short_weight": 0,
            },
            {"bm25_weight": float("nan")},
            {"short_weight": -1},
        ],
    )
    async def test_recall_rejects_bad_arguments(
        self, memory: EpisodicMemory, bad: dict[str, Any]
    ) -> None:
        args: dict[str, Any] = {"user_id": U, "agent_id": A, "query": "q", **bad}
        with pytest.raises(ValidationError):
            await memory.recall(**args)

    # -- count, read_recent ----------------------------------------------------------------

    async def test_count(self, memory: EpisodicMemory, loaded: list[str]) -> None:
        assert await memory.count(user_id=U, agent_id=A) == len(CORPUS)
        assert await memory.count(user_id=U, agent_id=A, conversation_id="c3") == 2
        assert await memory.count(user_id="user-2", agent_id=A) == 1
        assert await memory.count(user_id="nobody", agent_id=A) == 0

    async def test_read_recent_newest_first(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        recent = await memory.read_recent(3, user_id=U, agent_id=A)
        ends = [i["timestamp_end"] for i in recent]
        assert len(recent) == 3 and ends == sorted(ends, reverse=True)
        assert recent[-1]["conversation_id"] == "c2"
        assert [
            i["conversation_id"]
            for i in await memory.read_recent(5, user_id=U, agent_id=A, conversation_id="c1")
        ] == ["c1"]
        assert await memory.read_recent(0, user_id=U, agent_id=A) == []

    # -- forget ----------------------------------------------------------------------------

    async def test_forget_one_point(self, memory: EpisodicMemory, loaded: list[str]) -> None:
        assert await memory.forget(user_id="user-2", agent_id=A, point_id=loaded[0]) == 0
        assert await memory.count(user_id=U, agent_id=A) == len(CORPUS)
        assert await memory.forget(user_id=U, agent_id=A, point_id=loaded[0]) == 1
        assert await memory.count(user_id=U, agent_id=A) == len(CORPUS) - 1
        with pytest.raises(NotFoundError):
            await memory.get(loaded[0], user_id=U, agent_id=A)

    async def test_forget_conversation_and_everything(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        assert await memory.forget(user_id=U, agent_id=A, conversation_id="c3") == 2
        assert await memory.count(user_id=U, agent_id=A) == len(CORPUS) - 2
        assert await memory.forget(user_id=U, agent_id=A, everything=True) == len(CORPUS) - 2
        assert await memory.count(user_id=U, agent_id=A) == 0
        assert await memory.count(user_id="user-2", agent_id=A) == 1
        assert await memory.count(user_id=U, agent_id="agent-2") == 1

    async def test_forget_needs_exactly_one_target(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        with pytest.raises(ValidationError):
            await memory.forget(user_id=U, agent_id=A)
        with pytest.raises(ValidationError):
            await memory.forget(user_id=U, agent_id=A, conversation_id="c1", everything=True)
        assert await memory.count(user_id=U, agent_id=A) == len(CORPUS)

    # -- export and import -----------------------------------------------------------------

    async def test_export_import_round_trip(
        self, memory: EpisodicMemory, loaded: list[str], tmp_path: Any
    ) -> None:
        target = tmp_path / "out.jsonl"
        assert await memory.export(target, user_id=U, agent_id=A) == len(CORPUS)
        lines = target.read_text().splitlines()
        assert {json.loads(line)["user_id"] for line in lines} == {U}
        before = {pid: await memory.get(pid, user_id=U, agent_id=A) for pid in loaded}
        await memory.forget(user_id=U, agent_id=A, everything=True)
        report = await memory.import_(target)
        assert sorted(report.imported) == sorted(loaded) and report.skipped == []
        for pid, item in before.items():
            again = await memory.get(pid, user_id=U, agent_id=A)
            item.pop("created_at")
            again.pop("created_at")
            assert again == item

    async def test_import_strict_imports_nothing_on_a_bad_line(
        self, memory: EpisodicMemory, loaded: list[str]
    ) -> None:
        buf = io.StringIO()
        await memory.export(buf, user_id=U, agent_id=A)
        await memory.forget(user_id=U, agent_id=A, everything=True)
        lines = buf.getvalue().splitlines()
        lines.insert(1, "{not json")
        lines.insert(
            3,
            json.dumps(
                {
                    "short_summary": "",
                    "long_summary": "x",
                    "user_id": U,
                    "agent_id": A,
                    "conversation_id": "c",
                }
            ),
        )
        text = "\n".join(lines)
        with pytest.raises(ImportFileError) as info:
            await memory.import_(io.StringIO(text))
        assert [n for n, _ in info.value.errors] == [2, 4]
        assert await memory.count(user_id=U, agent_id=A) == 0
        report = await memory.import_(io.StringIO(text), errors="skip")
        assert len(report.imported) == len(CORPUS) and [n for n, _ in report.skipped] == [2, 4]
        assert await memory.count(user_id=U, agent_id=A) == len(CORPUS)

    # -- stats -----------------------------------------------------------------------------

    async def test_stats(self, memory: EpisodicMemory, loaded: list[str]) -> None:
        stats = await memory.stats(user_id=U, agent_id=A)
        assert stats["episodes"] == len(CORPUS) and stats["conversations"] == 3
        assert stats["first_episode_at"] == T0
        assert stats["last_episode_at"] == T0 + timedelta(days=7, minutes=10)
        assert stats["top_tools"][0] == ("lookup_order", 2)
        assert stats["sentiment_mean"] == pytest.approx(0.1)
        assert stats["sentiment_trend"] > 0 and stats["sentiment_direction"] == "improving"
        empty = await memory.stats(user_id="nobody", agent_id=A)
        assert empty["episodes"] == 0 and empty["sentiment_trend"] is None

    # -- the embedder is recorded ------------------------------------------------------------

    async def test_store_records_embedder(self, memory: EpisodicMemory) -> None:
        # The collection exists, so ensure_collection returns the manifest it was created with.
        stored = memory.engine.ensure_collection(
            CollectionSpec(name=memory.store.collection, dense={})
        )
        assert stored["embedder"] == memory.embedder.model_id
        assert stored["dimension"] == memory.embedder.dimension
