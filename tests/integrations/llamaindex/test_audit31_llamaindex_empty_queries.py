"""An empty or blank query gets no nodes from the LlamaIndex retriever, and the engine answers.

`EpisodicRetriever` handed an empty or whitespace-only query to `recall`, which refuses it
with `ValidationError`; the retriever raised it, so a chat or query engine built on it failed
on a user's blank message (an attachment sent alone, a stray newline) and the user got no
answer. The LangChain retriever returns no documents for such a query, and the LlamaIndex
memory tool answers "Give a query"; this retriever now returns no nodes, as they do.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from episodex import EpisodicMemory
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.memory.episodex import EpisodicRetriever

AGENT = "support"
BLANK = ["", "   ", "\n\t", "\u3000"]


@pytest.fixture(scope="module")
def retriever(memory: EpisodicMemory) -> EpisodicRetriever:
    user = f"u-{uuid.uuid4().hex}"
    asyncio.run(
        memory.memorize(
            short_summary="Refund for the broken kettle",
            long_summary="The kettle arrived cracked; it was refunded.",
            user_id=user,
            agent_id=AGENT,
            conversation_id="monday",
        )
    )
    return EpisodicRetriever(memory, user_id=user, agent_id=AGENT)


@pytest.mark.parametrize("blank", BLANK, ids=repr)
async def test_a_blank_query_gets_no_nodes(retriever: EpisodicRetriever, blank: str) -> None:
    assert retriever.retrieve(blank) == []
    assert await retriever.aretrieve(blank) == []
    # The retriever itself still works for a real query.
    assert retriever.retrieve("kettle refund")


@pytest.mark.parametrize("blank", BLANK, ids=repr)
async def test_engines_answer_a_blank_message(retriever: EpisodicRetriever, blank: str) -> None:
    chat = ContextChatEngine.from_defaults(retriever=retriever, llm=MockLLM())
    assert chat.chat(blank).response is not None
    assert (await chat.achat(blank)).response is not None
    query = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    assert query.query(blank).source_nodes == []
