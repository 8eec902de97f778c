"""Isolation beyond episodes: step lessons, and the LangChain and LlamaIndex retrievers.

Every tenant stores the very same content, so only the tenant filter can keep them apart.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from episodex import EpisodicMemory, StepLessonMemory, StepMemory, ValidationError
from episodex.testing import HashEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_episodex import EpisodicRetriever as LangChainRetriever
from llama_index.memory.episodex import EpisodicRetriever as LlamaIndexRetriever

from ._support import BACKENDS, open_memory

USERS = ("alice", "Alice", "bob")
AGENTS = ("web", "Web")
SESSIONS = ("ticket-7", "ticket-7 ")
SCOPES = list(itertools.product(USERS, AGENTS, SESSIONS))
PAGE = {
    "url": "https://app.test/tickets/7",
    "elements": ["[12] button 'Priority'", "[13] button 'Delete'"],
}


def _step(scope: tuple[str, str, str], n: int, outcome: str) -> StepMemory:
    user, agent, session = scope
    return StepMemory(
        step_id=f"s{n}",
        user_id=user,
        agent_id=agent,
        session_id=session,
        run_id=f"run-{n}",
        rep=1,
        step_num=n + 1,
        env_pre=PAGE,  # pyright: ignore[reportArgumentType]
        internal_state="set ticket 7 to high priority",
        action="click('12')",
        action_element_text="Priority",
        outcome=outcome,  # pyright: ignore[reportArgumentType]
        outcome_reason="it worked",
    )


@settings(derandomize=True, database=None, deadline=None, max_examples=8)
@given(
    writes=st.lists(
        st.tuples(st.sampled_from(SCOPES), st.sampled_from(["success", "failure"])),
        min_size=1,
        max_size=25,
    )
)
async def test_lessons_never_cross_users_agents_or_sessions(
    writes: list[tuple[tuple[str, str, str], str]],
) -> None:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    try:
        lessons = StepLessonMemory.from_memory(mem)
        await lessons.store_memories(
            [_step(scope, n, outcome) for n, (scope, outcome) in enumerate(writes)]
        )
        model = Counter(scope for scope, _ in writes)
        for scope in SCOPES:
            user, agent, session = scope
            assert await lessons.count(session, user_id=user, agent_id=agent) == model[scope]
            loaded = await lessons.load_all_memories_for_session(
                session, user_id=user, agent_id=agent
            )
            assert {(m.user_id, m.agent_id, m.session_id) for m in loaded} <= {scope}
            assert len(loaded) == model[scope]
            # The next attempt's number counts only this scope's attempts.
            episode = await lessons.init_episode(session, user_id=user, agent_id=agent)
            assert episode.rep == (2 if model[scope] else 1)
            found = await lessons.retrieve_memories(
                PAGE, "set ticket 7 to high priority", env_threshold=0.0, top_k=100, final_k=100
            )
            assert {(r.memory.user_id, r.memory.agent_id, r.memory.session_id) for r in found} <= {
                scope
            }
            # Every step has the same action, and a repeated action is shown once.
            assert len(found) == min(1, model[scope])
        # Forgetting one scope leaves every other scope whole.
        victim = writes[0][0]
        assert (
            await lessons.forget_session(victim[2], user_id=victim[0], agent_id=victim[1])
            == model[victim]
        )
        for scope in SCOPES:
            expected = 0 if scope == victim else model[scope]
            assert await lessons.count(scope[2], user_id=scope[0], agent_id=scope[1]) == expected
    finally:
        mem.close()


async def test_a_step_id_of_another_tenant_cannot_be_overwritten() -> None:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    try:
        lessons = StepLessonMemory.from_memory(mem)
        alice = ("alice", "web", "ticket-7")
        (alice_id,) = await lessons.store_memories([_step(alice, 0, "success")])
        for other in (
            ("bob", "web", "ticket-7"),
            ("alice", "Web", "ticket-7"),
            ("alice", "web", "ticket-8"),
        ):
            stolen = _step(other, 0, "failure").model_copy(update={"id": alice_id})
            with pytest.raises(ValidationError, match="already belongs to another"):
                await lessons.store_memories([stolen])
        same_batch = [
            _step(("carol", "web", "t"), 1, "success"),
            _step(("dave", "web", "t"), 1, "success"),
        ]
        same_batch[1] = same_batch[1].model_copy(update={"id": same_batch[0].id})
        with pytest.raises(ValidationError, match="earlier in the batch"):
            await lessons.store_memories(same_batch)
        assert await lessons.count("ticket-7", user_id="alice", agent_id="web") == 1
        assert await lessons.count("t", user_id="carol", agent_id="web") == 0
        (loaded,) = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="alice", agent_id="web"
        )
        assert (loaded.id, loaded.outcome) == (alice_id, "success")
        # The owner may still rewrite its own step.
        await lessons.store_memories([loaded.model_copy(update={"outcome_reason": "updated"})])
        (again,) = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="alice", agent_id="web"
        )
        assert again.outcome_reason == "updated"
    finally:
        mem.close()


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Six tenants with identical episodes, on each backend, with the real embedder."""
    with open_memory(request.param, tmp_path_factory.mktemp("adapters")) as mem:
        mem.store.memorize_many(
            [
                {
                    "short_summary": "refund for order 1234",
                    "long_summary": "the user asked for a refund; issued",
                    "user_id": user,
                    "agent_id": agent,
                    "conversation_id": conv,
                }
                for user in USERS
                for agent in AGENTS
                for conv in ("c1", "c2")
            ]
        )
        yield mem


def _tenants() -> list[tuple[str, str]]:
    return list(itertools.product(USERS, AGENTS))


async def test_langchain_retriever_never_returns_another_tenant(shared: EpisodicMemory) -> None:
    for user, agent in _tenants():
        for conv in (None, "c1"):
            retriever = LangChainRetriever(
                memory=shared, user_id=user, agent_id=agent, conversation_id=conv, k=50
            )
            for docs in (retriever.invoke("refund"), await retriever.ainvoke("refund")):
                assert len(docs) == 2
                assert {(d.metadata["user_id"], d.metadata["agent_id"]) for d in docs} == {
                    (user, agent)
                }


async def test_llama_index_retriever_never_returns_another_tenant(shared: EpisodicMemory) -> None:
    for user, agent in _tenants():
        retriever = LlamaIndexRetriever(
            shared,
            user_id=user,
            agent_id=agent,
            conversation_id="c2",
            previous_conversation_limit=50,
            same_conversation_limit=50,
        )
        for nodes in (retriever.retrieve("refund"), await retriever.aretrieve("refund")):
            assert len(nodes) == 2
            assert {(n.node.metadata["user_id"], n.node.metadata["agent_id"]) for n in nodes} == {
                (user, agent)
            }
