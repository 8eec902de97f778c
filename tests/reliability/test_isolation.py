"""Isolation: no operation ever reads, counts, exports, overwrites or deletes another tenant's data.

A hypothesis state machine drives random operations for many users and agents (with ids that
differ only by case, a trailing space or an accent) and checks every answer against a plain
dictionary model. The same machine runs on every backend. Besides the core API it writes
nested and huge metadata (refused exactly where the store's bounds say), reads through the
LangChain and LlamaIndex retrievers, and records through the adapters' id sources: the LCEL
helpers' `configurable` against their defaults, and the agent middleware's runtime context
against its defaults and the LangGraph thread id. A second test shares one lessons instance
among concurrent attempts of look-alike users.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
from collections import Counter
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from episodex import (
    EpisodicMemory,
    ImportFileError,
    NotFoundError,
    ProgrammaticGrader,
    StepLessonMemory,
    SyncEpisodicMemory,
    ValidationError,
    default_embedder,
)
from episodex.testing import HashEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ._support import (
    BACKENDS,
    QDRANT_API_KEY,
    QDRANT_URL,
    drop_server_collections,
    parse_export,
    server_prefix,
    total_points,
)

# Slow: stateful property tests over many operations; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

# Ids that a careless filter (prefix, case-folding, trimming, normalising) would confuse.
USERS = ("alice", "Alice", "alice ", "ålice", "bob", "u/1")
AGENTS = ("support", "Support", "sales")
TENANTS = [(u, a) for u in USERS for a in AGENTS]
CONVS = ("c1", "c2", "c1 ")
WORDS = ("refund", "invoice", "password", "shipping", "printer", "upgrade", "delay", "coupon")
FLOWS = ("billing", "login", "returns")
BASE = datetime(2024, 1, 1, tzinfo=UTC)
BIG = 1000  # limits above any tenant's size: recall must then return the tenant's whole set


tenants = st.sampled_from(TENANTS)
convs = st.sampled_from(CONVS)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


@dataclass
class Episode:
    user: str
    agent: str
    conv: str
    short: str
    long: str
    end: datetime
    flows: list[str]
    metadata: dict[str, Any] | None = None


@contextmanager
def shared_memory(
    backend: str, folder: Path, embedder: Any
) -> Generator[SyncEpisodicMemory | None]:
    """One store per test, emptied after each example (creating one on disk takes a second).

    qdrant-client's local mode is cheap to create but slows down as deleted points pile up,
    so it gets a fresh store per example instead (None here).
    """
    if backend == "memory":
        yield None
        return
    if backend == "edge":
        raw = EpisodicMemory(folder / "store", embedder=embedder)
    else:
        raw = EpisodicMemory(
            url=QDRANT_URL,
            api_key=QDRANT_API_KEY,
            collection_prefix=server_prefix(),
            embedder=embedder,
        )
    mem = SyncEpisodicMemory(memory=raw)
    try:
        yield mem
    finally:
        if backend == "server":
            drop_server_collections(raw)
        mem.close()


class IsolationMachine(RuleBasedStateMachine):
    """Random operations across 18 tenants, each answer compared with a dictionary model."""

    shared: ClassVar[SyncEpisodicMemory | None]
    embedder: ClassVar[Any]
    operations: ClassVar[int] = 0  # rules run, over every example of this class
    by_rule: ClassVar[Counter[str]]  # how often each rule ran

    def __init__(self) -> None:
        super().__init__()
        if self.shared is None:
            self.mem = SyncEpisodicMemory(location=":memory:", embedder=self.embedder)
        else:
            self.mem = self.shared
        self.raw: EpisodicMemory = self.mem.memory
        self.model: dict[str, Episode] = {}
        self.clock = 0
        assert total_points(self.raw) == 0

    def teardown(self) -> None:
        if self.shared is None:
            self.mem.close()
            return
        # Empty the store for the next example, through the tenant-scoped API.
        for user, agent in TENANTS:
            self.mem.forget(user_id=user, agent_id=agent, everything=True)

    # -- helpers --------------------------------------------------------------------------

    def _owned(self, tenant: tuple[str, str], conv: str | None = None) -> dict[str, Episode]:
        return {
            pid: ep
            for pid, ep in self.model.items()
            if (ep.user, ep.agent) == tenant and (conv is None or ep.conv == conv)
        }

    def _record(
        self, tenant: tuple[str, str], conv: str, text: str, flows: list[str]
    ) -> dict[str, Any]:
        self.clock += 1
        end = BASE + timedelta(minutes=self.clock)
        return {
            "short_summary": text,
            "long_summary": f"{text} and then {text}",
            "user_id": tenant[0],
            "agent_id": tenant[1],
            "conversation_id": conv,
            "flows_activated": flows,
            "timestamp_begin": end - timedelta(seconds=30),
            "timestamp_end": end,
        }

    def _remember(self, pid: str, rec: dict[str, Any]) -> None:
        self.model[pid] = Episode(
            rec["user_id"],
            rec["agent_id"],
            rec["conversation_id"],
            rec["short_summary"],
            rec["long_summary"],
            rec["timestamp_end"],
            list(rec["flows_activated"]),
        )

    def _check_item(self, item: dict[str, Any], tenant: tuple[str, str]) -> None:
        assert (item["user_id"], item["agent_id"]) == tenant, (
            f"leaked {item['point_id']} to {tenant}"
        )
        ep = self.model[item["point_id"]]
        assert (ep.user, ep.agent, ep.conv) == (
            item["user_id"],
            item["agent_id"],
            item["conversation_id"],
        )
        assert item["short_summary_text"] == ep.short

    def _count_op(self) -> None:
        type(self).operations += 1
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        type(self).by_rule[caller.f_code.co_name if caller is not None else "?"] += 1

    # -- writes ---------------------------------------------------------------------------

    @initialize(seed=st.lists(st.tuples(tenants, convs, texts), min_size=3, max_size=8))
    def seed_store(self, seed: list[tuple[tuple[str, str], str, str]]) -> None:
        records = [self._record(t, c, x, []) for t, c, x in seed]
        ids = self.mem.memorize_many(records)
        for pid, rec in zip(ids, records, strict=True):
            self._remember(pid, rec)
        self._count_op()

    @rule(
        tenant=tenants, conv=convs, text=texts, flows=st.lists(st.sampled_from(FLOWS), max_size=2)
    )
    def memorize(self, tenant: tuple[str, str], conv: str, text: str, flows: list[str]) -> None:
        rec = self._record(tenant, conv, text, flows)
        pid = self.mem.memorize(**rec)
        assert pid not in self.model
        self._remember(pid, rec)
        self._count_op()

    @rule(batch=st.lists(st.tuples(tenants, convs, texts), min_size=1, max_size=4))
    def memorize_many_mixed_tenants(self, batch: list[tuple[tuple[str, str], str, str]]) -> None:
        records = [self._record(t, c, x, ["billing"]) for t, c, x in batch]
        ids = self.mem.memorize_many(records)
        for pid, rec in zip(ids, records, strict=True):
            self._remember(pid, rec)
        self._count_op()

    @precondition(lambda self: self.model)
    @rule(data=st.data(), thief=tenants, text=texts)
    def memorize_over_an_existing_id(
        self, data: st.DataObject, thief: tuple[str, str], text: str
    ) -> None:
        """Writing with an existing id replaces it for its owner; anyone else is refused."""
        pid = data.draw(st.sampled_from(list(self.model)))
        victim = self.model[pid]
        rec = self._record(thief, victim.conv, text, [])
        if (victim.user, victim.agent) == thief:
            assert self.mem.memorize(**rec, point_id=pid) == pid
            self._remember(pid, rec)
        else:
            with pytest.raises(ValidationError, match="another user or agent"):
                self.mem.memorize(**rec, point_id=pid)
            kept = self.mem.get(pid, user_id=victim.user, agent_id=victim.agent)
            assert kept["short_summary_text"] == victim.short
        self._count_op()

    @rule(
        tenant=tenants,
        conv=convs,
        text=texts,
        depth=st.integers(1, 40),
        blob=st.sampled_from([0, 0, 0, 2_000, 60_000, (1 << 20) - 200, (1 << 20) + 10]),
        number=st.sampled_from([0, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, -(2**64)]),
    )
    def memorize_nested_or_huge_metadata(
        self, tenant: tuple[str, str], conv: str, text: str, depth: int, blob: int, number: int
    ) -> None:
        """Accepted exactly within the bounds (32 levels, 1 MiB, 64-bit), and kept exactly."""
        nested: dict[str, Any] = {"leaf": number}
        for _ in range(depth - 1):
            nested = {"k": nested}
        metadata: dict[str, Any] = {"blob": "m" * blob, "tree": nested}
        levels = depth + 1  # the metadata object itself is the first level
        fits = (
            levels <= 32
            and len(json.dumps(metadata).encode()) <= 1 << 20
            and -(2**63) <= number < 2**63
        )
        rec: dict[str, Any] = {**self._record(tenant, conv, text, []), "metadata": metadata}
        if not fits:
            with pytest.raises(ValidationError):
                self.mem.memorize(**rec)
        else:
            pid = self.mem.memorize(**rec)
            self._remember(pid, rec)
            self.model[pid].metadata = metadata
        self._count_op()

    # -- the adapters' id sources ---------------------------------------------------------

    def _adopt_newest(self, tenant: tuple[str, str], before: set[str]) -> None:
        """Put the one episode an adapter just wrote for `tenant` into the model."""
        items = self.mem.read_recent(BIG, user_id=tenant[0], agent_id=tenant[1])
        new = [i for i in items if i["point_id"] not in before]
        assert len(new) == 1, (tenant, new)
        item = new[0]
        self._check_item_owner(item, tenant)
        self.model[item["point_id"]] = Episode(
            tenant[0],
            tenant[1],
            item["conversation_id"],
            item["short_summary_text"],
            item["long_summary_text"],
            item["timestamp_end"],
            list(item.get("flows_activated") or []),
        )

    def _check_item_owner(self, item: dict[str, Any], tenant: tuple[str, str]) -> None:
        assert (item["user_id"], item["agent_id"]) == tenant, f"written to the wrong tenant {item}"

    @rule(
        tenant=tenants,
        conv=convs,
        text=texts,
        split=st.sampled_from(["configurable", "defaults", "mixed"]),
    )
    def record_through_lcel(
        self, tenant: tuple[str, str], conv: str, text: str, split: str
    ) -> None:
        """Explicit ids win over `configurable` ones (the one id rule); either lands exactly there."""
        from langchain_episodex import record_exchange

        user, agent = tenant
        decoy = next(t for t in TENANTS if t != tenant)
        defaults: dict[str, str]
        if split == "configurable":
            defaults = {}
            configurable = {"user_id": user, "agent_id": agent, "conversation_id": conv}
        elif split == "defaults":
            defaults = {"user_id": user, "agent_id": agent, "conversation_id": conv}
            configurable = {"user_id": decoy[0], "agent_id": decoy[1]}
        else:
            defaults = {"user_id": user}
            configurable = {"user_id": decoy[0], "agent_id": agent, "conversation_id": conv}
        before = set(self._owned(tenant))
        record_exchange(
            self.raw, text, f"answer to {text}", config={"configurable": configurable}, **defaults
        )
        self._adopt_newest(tenant, before)
        self._count_op()

    @rule(tenant=tenants, conv=convs, text=texts, source=st.sampled_from(["context", "defaults"]))
    def record_through_the_agent_middleware(
        self, tenant: tuple[str, str], conv: str, text: str, source: str
    ) -> None:
        """Constructor ids win over the runtime context's (the one id rule); the thread id is the
        conversation."""
        from langchain.agents import create_agent
        from langchain_core.language_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage, HumanMessage
        from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
        from langgraph.checkpoint.memory import InMemorySaver

        user, agent = tenant
        decoy = next(t for t in TENANTS if t[0] != user and t[1] != agent)
        if source == "context":
            middleware = EpisodicMemoryMiddleware(self.raw)
            context = {"user_id": user, "agent_id": agent}
        else:
            middleware = EpisodicMemoryMiddleware(self.raw, user_id=user, agent_id=agent)
            context = {"user_id": decoy[0], "agent_id": decoy[1]}
        runner = create_agent(
            GenericFakeChatModel(messages=iter([AIMessage(f"answer to {text}")])),
            middleware=[middleware],
            context_schema=EpisodicContext,
            checkpointer=InMemorySaver(),
        )
        before = set(self._owned(tenant))
        out = runner.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": conv}},
            context=context,
        )
        assert out["messages"][-1].text == f"answer to {text}"
        self._adopt_newest(tenant, before)
        [new] = set(self._owned(tenant)) - before
        assert self.model[new].conv == conv
        self._count_op()

    @rule(tenant=tenants, conv=st.none() | convs, query=texts)
    def langchain_retriever(self, tenant: tuple[str, str], conv: str | None, query: str) -> None:
        from langchain_episodex import EpisodicRetriever

        retriever = EpisodicRetriever(
            memory=self.raw, user_id=tenant[0], agent_id=tenant[1], conversation_id=conv, k=BIG
        )
        docs = retriever.invoke(query)
        assert {(d.metadata["user_id"], d.metadata["agent_id"]) for d in docs} <= {tenant}
        assert {d.id for d in docs} == set(self._owned(tenant))
        self._count_op()

    @rule(tenant=tenants, conv=convs, query=texts)
    def llama_index_retriever(self, tenant: tuple[str, str], conv: str, query: str) -> None:
        from llama_index.memory.episodex import EpisodicRetriever

        retriever = EpisodicRetriever(
            self.raw,
            user_id=tenant[0],
            agent_id=tenant[1],
            conversation_id=conv,
            previous_conversation_limit=BIG,
            same_conversation_limit=BIG,
        )
        nodes = retriever.retrieve(query)
        assert {(n.node.metadata["user_id"], n.node.metadata["agent_id"]) for n in nodes} <= {
            tenant
        }
        assert {n.node.metadata["point_id"] for n in nodes} == set(self._owned(tenant))
        self._count_op()

    # -- reads ----------------------------------------------------------------------------

    @rule(
        tenant=tenants,
        conv=st.none() | convs,
        query=texts,
        weights=st.sampled_from(
            [(0.2, 0.3, 0.5), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
        ),
    )
    def recall(
        self, tenant: tuple[str, str], conv: str | None, query: str, weights: tuple[float, ...]
    ) -> None:
        res = self.mem.recall(
            user_id=tenant[0],
            agent_id=tenant[1],
            query=query,
            conversation_id=conv,
            previous_conversation_limit=BIG,
            same_conversation_limit=BIG,
            short_weight=weights[0],
            long_weight=weights[1],
            bm25_weight=weights[2],
        )
        same = {i["point_id"] for i in res["same_conversation"]}
        prev = {i["point_id"] for i in res["previous_conversations"]}
        for item in res["same_conversation"]:
            self._check_item(item, tenant)
            assert item["conversation_id"] == conv
        for item in res["previous_conversations"]:
            self._check_item(item, tenant)
            assert item["conversation_id"] != conv
        owned = self._owned(tenant)
        want_same = {p for p, e in owned.items() if conv is not None and e.conv == conv}
        want_prev = {p for p, e in owned.items() if e.conv != conv}
        if weights[0] or weights[1]:
            # A dense stream ranks every point it may see: the answer is the whole tenant.
            assert same == want_same
            assert prev == want_prev
        else:
            assert same <= want_same
            assert prev <= want_prev
        self._count_op()

    @rule(tenant=tenants, conv=st.none() | convs, n=st.integers(0, 6))
    def read_recent(self, tenant: tuple[str, str], conv: str | None, n: int) -> None:
        got = self.mem.read_recent(n, user_id=tenant[0], agent_id=tenant[1], conversation_id=conv)
        owned = self._owned(tenant, conv)
        want = sorted(owned, key=lambda p: owned[p].end, reverse=True)[:n]
        assert [i["point_id"] for i in got] == want
        for item in got:
            self._check_item(item, tenant)
        self._count_op()

    @rule(tenant=tenants, conv=st.none() | convs)
    def count(self, tenant: tuple[str, str], conv: str | None) -> None:
        got = self.mem.count(user_id=tenant[0], agent_id=tenant[1], conversation_id=conv)
        assert got == len(self._owned(tenant, conv))
        self._count_op()

    @rule(tenant=tenants)
    def stats(self, tenant: tuple[str, str]) -> None:
        got = self.mem.stats(user_id=tenant[0], agent_id=tenant[1], top=len(FLOWS))
        owned = self._owned(tenant)
        assert got["episodes"] == len(owned)
        assert got["conversations"] == len({e.conv for e in owned.values()})
        assert dict(got["top_flows"]) == Counter(f for e in owned.values() for f in e.flows)
        self._count_op()

    @rule(tenant=tenants, conv=st.none() | convs)
    def export(self, tenant: tuple[str, str], conv: str | None) -> None:
        buf = io.StringIO()
        n = self.mem.export(buf, user_id=tenant[0], agent_id=tenant[1], conversation_id=conv)
        records = parse_export(buf.getvalue())
        owned = self._owned(tenant, conv)
        assert n == len(records) == len(owned)
        assert {r["point_id"] for r in records} == set(owned)
        for r in records:
            assert (r["user_id"], r["agent_id"]) == tenant
            assert r["short_summary"] == owned[r["point_id"]].short
        self._count_op()

    @precondition(lambda self: self.model)
    @rule(data=st.data(), asker=tenants)
    def get(self, data: st.DataObject, asker: tuple[str, str]) -> None:
        pid = data.draw(st.sampled_from(list(self.model)))
        ep = self.model[pid]
        if (ep.user, ep.agent) == asker:
            item = self.mem.get(pid, user_id=asker[0], agent_id=asker[1])
            self._check_item(item, asker)
            assert item["long_summary_text"] == ep.long
            if ep.metadata is not None:
                assert item["metadata"] == ep.metadata
        else:
            with pytest.raises(NotFoundError):
                self.mem.get(pid, user_id=asker[0], agent_id=asker[1])
        self._count_op()

    # -- deletes and imports --------------------------------------------------------------

    @precondition(lambda self: self.model)
    @rule(data=st.data(), asker=tenants)
    def forget_one(self, data: st.DataObject, asker: tuple[str, str]) -> None:
        pid = data.draw(st.sampled_from(list(self.model)))
        ep = self.model[pid]
        n = self.mem.forget(user_id=asker[0], agent_id=asker[1], point_id=pid)
        if (ep.user, ep.agent) == asker:
            assert n == 1
            del self.model[pid]
        else:
            assert n == 0
        self._count_op()

    @rule(tenant=tenants, conv=convs)
    def forget_conversation(self, tenant: tuple[str, str], conv: str) -> None:
        doomed = self._owned(tenant, conv)
        assert self.mem.forget(user_id=tenant[0], agent_id=tenant[1], conversation_id=conv) == len(
            doomed
        )
        for pid in doomed:
            del self.model[pid]
        self._count_op()

    @rule(tenant=tenants)
    def forget_everything(self, tenant: tuple[str, str]) -> None:
        doomed = self._owned(tenant)
        assert self.mem.forget(user_id=tenant[0], agent_id=tenant[1], everything=True) == len(
            doomed
        )
        for pid in doomed:
            del self.model[pid]
        self._count_op()

    @rule(source=tenants, into=tenants, strict=st.booleans())
    def import_into_another_tenant(
        self, source: tuple[str, str], into: tuple[str, str], strict: bool
    ) -> None:
        """An import restricted to one tenant takes none of another tenant's records."""
        buf = io.StringIO()
        n = self.mem.export(buf, user_id=source[0], agent_id=source[1])
        buf.seek(0)
        if source == into or n == 0:
            report = self.mem.import_(buf, user_id=into[0], agent_id=into[1])
            assert sorted(report.imported) == sorted(self._owned(source))  # same ids: replaced
        elif strict:
            with pytest.raises(ImportFileError) as info:
                self.mem.import_(buf, user_id=into[0], agent_id=into[1])
            assert len(info.value.errors) == n
        else:
            report = self.mem.import_(buf, errors="skip", user_id=into[0], agent_id=into[1])
            assert report.imported == []
            assert len(report.skipped) == n
        self._count_op()

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def nothing_appears_or_vanishes(self) -> None:
        assert total_points(self.raw) == len(self.model)


def _is_rule(name: str) -> bool:
    member = getattr(IsolationMachine, name, None)
    return callable(member) and hasattr(member, "hypothesis_stateful_rule")


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=True,  # fixed seed: the same operations on every run
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_operations_never_cross_tenants(backend: str, tmp_path: Path) -> None:
    """Over a thousand random operations per backend, with a fake embedder (exact vectors)."""
    embedder = HashEmbedder()
    with shared_memory(backend, tmp_path, embedder) as mem:
        attrs = {"shared": mem, "embedder": embedder, "operations": 0, "by_rule": Counter()}
        machine = type("IsolationMachine", (IsolationMachine,), attrs)
        run_state_machine_as_test(machine, settings=_settings(25, 50))
    assert machine.operations >= 1000, machine.operations
    # Every kind of operation ran, the adapters' id sources and big metadata included.
    rules = {name for name, _ in inspect.getmembers(IsolationMachine) if _is_rule(name)}
    assert {r for r in rules if machine.by_rule[r] < 5} == set(), machine.by_rule


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_operations_never_cross_tenants_with_the_real_embedder(
    backend: str, tmp_path: Path
) -> None:
    """The same machine on the bundled model: real vectors, where identical texts collide."""
    embedder = default_embedder()
    with shared_memory(backend, tmp_path, embedder) as mem:
        attrs = {"shared": mem, "embedder": embedder, "operations": 0, "by_rule": Counter()}
        machine = type("IsolationMachine", (IsolationMachine,), attrs)
        run_state_machine_as_test(machine, settings=_settings(6, 30))
    assert machine.operations >= 100, machine.operations


# -- one lessons instance shared by concurrent attempts ---------------------------------------

LESSON_USERS = ("alice", "Alice", "alice ", "ålice", "bob")
LESSON_PAGE = {"url": "https://desk.test/t/7", "elements": ["[12] button 'Priority'"]}


class LessonRun:
    """Counts lesson operations over every example of the property test."""

    operations = 0


async def _attempt(
    lessons: StepLessonMemory, session: str, user: int, steps: int, gate: asyncio.Event
) -> str:
    """One user's attempt on the shared instance: wrong steps tagged with the user's index."""
    await lessons.init_episode(session, user_id=LESSON_USERS[user], agent_id="web", task="t")
    await gate.wait()  # every attempt is open on the shared instance at once
    for n in range(steps):
        await lessons.record_step_start(
            env_pre=LESSON_PAGE, internal_state=f"try {n}", action=f"fill('u{user}', '{n}')"
        )
        await asyncio.sleep(0)  # let the other attempts interleave
    block = await lessons.lessons_block(LESSON_PAGE, "t")
    await lessons.end_episode(final_env=LESSON_PAGE)
    LessonRun.operations += steps + 3
    return block


async def _round(lessons: StepLessonMemory, session: str, plan: list[tuple[int, int]]) -> None:
    for _ in range(2):  # the second round sees the first round's graded lessons
        gate = asyncio.Event()
        tasks = [
            asyncio.create_task(_attempt(lessons, session, user, steps, gate))
            for user, steps in plan
        ]
        await asyncio.sleep(0)
        gate.set()
        blocks = await asyncio.gather(*tasks)
        for (user, _), block in zip(plan, blocks, strict=True):
            others = {f"'u{u}'" for u, _ in plan if u != user}
            assert not any(tag in block for tag in others), (user, block)
    for user, steps in plan:
        stored = await lessons.load_all_memories_for_session(
            session, user_id=LESSON_USERS[user], agent_id="web"
        )
        assert {m.user_id for m in stored} <= {LESSON_USERS[user]}
        assert all(f"'u{user}'" in m.action for m in stored)
        LessonRun.operations += 1
        del steps


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["edge", "memory"])
def test_a_shared_lessons_instance_never_mixes_users(backend: str, tmp_path: Path) -> None:
    """Issue 14, item 2 under load: one instance, concurrent attempts of look-alike users."""
    embedder = HashEmbedder()
    memory = (
        EpisodicMemory(tmp_path / "store", embedder=embedder)
        if backend == "edge"
        else EpisodicMemory(location=":memory:", embedder=embedder)
    )
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    LessonRun.operations = 0
    sessions = iter(range(10**6))

    @settings(max_examples=40, derandomize=True, database=None, deadline=None)
    @given(
        plan=st.lists(
            st.tuples(st.integers(0, len(LESSON_USERS) - 1), st.integers(1, 4)),
            min_size=2,
            max_size=5,
            unique_by=lambda p: p[0],
        )
    )
    def check(plan: list[tuple[int, int]]) -> None:
        asyncio.run(_round(lessons, f"session-{next(sessions)}", plan))

    try:
        check()
    finally:
        memory.close()
    assert LessonRun.operations >= 1000, LessonRun.operations
