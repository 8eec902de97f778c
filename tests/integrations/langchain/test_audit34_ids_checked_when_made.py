"""An id the store refuses is refused when the retriever or the classic memory is made.

`recall_episodes`, `create_memory_search_tool` and `EpisodicMemoryMiddleware` check the ids
given to them when they are built (`ConfigurationError`). `EpisodicRetriever` and
`EpisodicConversationMemory` took a blank id, or one longer than the store's id rule allows,
and failed only when a chain ran: the retriever at every `invoke`, the classic memory at every
`load_memory_variables`, in the middle of the user's chain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, open_engine
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodicConversationMemory, EpisodicRetriever

TOO_LONG = "u" * 600
BAD_IDS: list[tuple[str, str]] = [
    (name, value)
    for name in ("user_id", "agent_id", "conversation_id")
    for value in (" ", "\t\n", TOO_LONG, "half \ud83d")
]


@pytest.fixture
def hashed() -> Iterator[EpisodicMemory]:
    memory = EpisodicMemory(
        engine=open_engine(location=":memory:"), embedder=HashEmbedder(), splade=False
    )
    yield memory
    memory.close()


@pytest.mark.parametrize(("name", "value"), BAD_IDS)
def test_a_retriever_with_a_bad_id_is_refused_when_made(
    hashed: EpisodicMemory, name: str, value: str
) -> None:
    ids: dict[str, Any] = {"user_id": "u1", "agent_id": "support", name: value}
    with pytest.raises(ConfigurationError, match=name):
        EpisodicRetriever(memory=hashed, **ids)


@pytest.mark.parametrize(("name", "value"), BAD_IDS)
def test_a_classic_memory_with_a_bad_id_is_refused_when_made(
    hashed: EpisodicMemory, name: str, value: str
) -> None:
    ids: dict[str, Any] = {"user_id": "u1", "agent_id": "support", name: value}
    with pytest.raises(ConfigurationError, match=name):
        EpisodicConversationMemory(memory=hashed, **ids)


async def test_good_ids_are_still_taken_and_used(hashed: EpisodicMemory) -> None:
    chat = EpisodicConversationMemory(
        memory=hashed, user_id="u1", agent_id="support", conversation_id=" c1 "
    )
    await chat.asave_context({"input": "Where is my refund?"}, {"output": "Sent on Monday."})
    retriever = EpisodicRetriever(memory=hashed, user_id="u1", agent_id="support", k=2)
    docs = await retriever.ainvoke("refund")
    assert [doc.metadata["conversation_id"] for doc in docs] == [" c1 "]
