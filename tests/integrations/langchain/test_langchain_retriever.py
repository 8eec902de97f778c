from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory, ValidationError
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_episodex import EpisodicRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

AGENT = "support"

REFUNDS = [
    ("Refund for order 1234", "The user asked for a refund for order 1234; it was issued."),
    ("Refund delayed for order 88", "The refund for order 88 was late; the agent escalated it."),
    ("Partial refund on a broken mug", "A mug arrived broken; a partial refund was agreed."),
    ("Refund policy questions", "The user asked how long refunds take; five working days."),
    ("Shipping address change", "The user moved and changed the shipping address."),
]


def _fill(mem: EpisodicMemory, user: str) -> None:
    asyncio.run(
        mem.memorize_many(
            {
                "short_summary": short,
                "long_summary": long,
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": f"c{i}",
                "tools_invoked": ["refunds"] if "efund" in short else [],
            }
            for i, (short, long) in enumerate(REFUNDS)
        )
    )


_SHARED: dict[str, Any] = {}


def _shared_memory() -> EpisodicMemory:
    # The standard suite builds the retriever from a property, so its store lives at class level.
    if "memory" not in _SHARED:
        mem = EpisodicMemory(location=":memory:")
        _fill(mem, "suite-user")
        _SHARED["memory"] = mem
    return _SHARED["memory"]


class TestEpisodicRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return EpisodicRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": _shared_memory(), "user_id": "suite-user", "agent_id": AGENT}

    @property
    def retriever_query_example(self) -> str:
        return "refund for my order"


@pytest.fixture(scope="module")
def filled(memory: EpisodicMemory) -> tuple[EpisodicMemory, str, str]:
    alice, bob = f"alice-{uuid.uuid4().hex}", f"bob-{uuid.uuid4().hex}"
    _fill(memory, alice)
    return memory, alice, bob


def test_documents_carry_summary_and_metadata(filled: tuple[EpisodicMemory, str, str]) -> None:
    memory, alice, _ = filled
    docs = EpisodicRetriever(memory=memory, user_id=alice, agent_id=AGENT, k=2).invoke(
        "refund order 1234"
    )
    assert len(docs) == 2
    top = docs[0]
    assert top.page_content == "Refund for order 1234"
    assert top.id == top.metadata["id"]
    assert top.metadata["conversation_id"] == "c0"
    assert top.metadata["score"] >= docs[1].metadata["score"]
    assert set(top.metadata["streams"]) <= {"short", "long", "bm25", "splade", "splade_short"}
    assert top.metadata["streams"]
    assert top.metadata["long_summary"].startswith("The user asked for a refund for order 1234")
    assert top.metadata["tools_invoked"] == ["refunds"]


async def test_async_matches_sync(filled: tuple[EpisodicMemory, str, str]) -> None:
    memory, alice, _ = filled
    retriever = EpisodicRetriever(memory=memory, user_id=alice, agent_id=AGENT)
    sync_docs = retriever.invoke("broken mug", k=3)
    async_docs = await retriever.ainvoke("broken mug", k=3)
    assert [d.id for d in sync_docs] == [d.id for d in async_docs]
    assert async_docs[0].page_content == "Partial refund on a broken mug"


def test_other_user_sees_nothing(filled: tuple[EpisodicMemory, str, str]) -> None:
    memory, _, bob = filled
    assert EpisodicRetriever(memory=memory, user_id=bob, agent_id=AGENT).invoke("refund") == []


def test_current_conversation_is_merged(filled: tuple[EpisodicMemory, str, str]) -> None:
    memory, alice, _ = filled
    retriever = EpisodicRetriever(
        memory=memory, user_id=alice, agent_id=AGENT, conversation_id="c4", k=5
    )
    docs = retriever.invoke("shipping address")
    assert docs[0].metadata["conversation_id"] == "c4"
    assert len(docs) == 5
    assert all(isinstance(d, Document) for d in docs)


def test_sync_memory_is_accepted(filled: tuple[EpisodicMemory, str, str]) -> None:
    memory, alice, _ = filled
    sync = SyncEpisodicMemory(memory=memory)
    try:
        retriever = EpisodicRetriever(memory=sync, user_id=alice, agent_id=AGENT, k=1)  # pyright: ignore[reportArgumentType]
        assert retriever.memory is memory
        assert len(retriever.invoke("refund")) == 1
    finally:
        sync.close()  # stops its loop; the memory it was given stays open
    assert (
        len(EpisodicRetriever(memory=memory, user_id=alice, agent_id=AGENT, k=1).invoke("refund"))
        == 1
    )


def test_bad_arguments_raise_typed_errors(filled: tuple[EpisodicMemory, str, str]) -> None:
    memory, alice, _ = filled
    with pytest.raises(ConfigurationError, match="k"):
        EpisodicRetriever(memory=memory, user_id=alice, agent_id=AGENT, k=0)
    with pytest.raises(ConfigurationError, match="memory"):
        EpisodicRetriever(memory="./memory", user_id=alice, agent_id=AGENT)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match="no user_id"):
        EpisodicRetriever(memory=memory, agent_id=AGENT).invoke("refund")
    with pytest.raises(ConfigurationError, match="unknown recall option"):
        EpisodicRetriever(memory=memory, user_id=alice, agent_id=AGENT, recall_options={"limit": 3})
    retriever = EpisodicRetriever(memory=memory, user_id=alice, agent_id=AGENT)
    with pytest.raises(ValidationError, match="k must be"):
        retriever.invoke("refund", k=0)
    with pytest.raises(ValidationError, match="unknown retriever argument"):
        retriever.invoke("refund", top_k=2)
    assert retriever.invoke("   ") == []  # an empty query finds nothing, as in langchain-qdrant


@pytest.fixture(scope="module", autouse=True)
def _close_shared_memory() -> Any:
    yield
    if "memory" in _SHARED:
        _SHARED.pop("memory").close()


def test_recall_options_are_the_core_recall_options(
    filled: tuple[EpisodicMemory, str, str],
) -> None:
    # The allowed names come from episodex.RecallOptions, so every core option is accepted.
    memory, alice, _ = filled
    retriever = EpisodicRetriever(
        memory=memory,
        user_id=alice,
        agent_id=AGENT,
        recall_options={"with_stream_ranks": False, "stage1_limit": 50, "rrf_k": 5},
    )
    docs = retriever.invoke("refund order 1234")
    assert docs and all("streams" not in d.metadata for d in docs)
