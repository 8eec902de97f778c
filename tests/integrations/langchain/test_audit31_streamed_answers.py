"""An answer streamed from an LCEL chain is recorded as its text, not as the chunks' JSON.

A chain run with `.stream`/`.astream` hands its answer over in message chunks. Passed to
`record_exchange` (or kept in a chain's output for the classic memory) as the list it was
collected in, the answer was taken for parsed data and recorded as the JSON dump of every
chunk (`[{"content": "Your", "additional_kwargs": {}, ..., "type": "AIMessageChunk"}, ...]`):
the episode held no readable answer, and recall showed that dump to the model. The chunks
are now joined into the one message they stream, and its text is recorded.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessageChunk
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_episodex import (
    EpisodicConversationMemory,
    arecord_exchange,
    recall_episodes,
    record_exchange,
)

AGENT = "support"
ANSWER = "Your refund for order 4471 was issued on Monday."
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Support.\n{recalled_episodes}"), ("human", "{question}")]
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)


def _chain(memory: EpisodicMemory) -> Any:
    model = GenericFakeChatModel(messages=iter([AIMessage(ANSWER)]))
    recall = recall_episodes(memory, input_key="question", agent_id=AGENT)
    return RunnablePassthrough.assign(recalled_episodes=recall) | PROMPT | model


def _config(user: str) -> Any:
    return {"configurable": {"user_id": user, "conversation_id": "c1"}}


async def _answers(memory: EpisodicMemory, user: str) -> list[str]:
    items = await memory.read_recent(10, user_id=user, agent_id=AGENT)
    return [item["long_summary_text"] for item in items]


async def test_a_sync_streamed_answer_is_recorded_as_its_text(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    chunks = list(_chain(memory).stream({"question": "Where is my refund?"}, _config(user)))
    assert len(chunks) > 1 and all(isinstance(c, AIMessageChunk) for c in chunks)
    record_exchange(memory, "Where is my refund?", chunks, agent_id=AGENT, config=_config(user))
    assert await _answers(memory, user) == [f"user: Where is my refund?\nassistant: {ANSWER}"]


async def test_an_async_streamed_answer_is_recorded_as_its_text(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    chunks = [c async for c in _chain(memory).astream({"question": "My refund?"}, _config(user))]
    # A tuple of chunks too.
    await arecord_exchange(
        memory, "My refund?", tuple(chunks), agent_id=AGENT, config=_config(user)
    )
    assert await _answers(memory, user) == [f"user: My refund?\nassistant: {ANSWER}"]


async def test_the_classic_memory_records_streamed_chunks_as_their_text(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    chat = EpisodicConversationMemory(memory=memory, user_id=user, agent_id=AGENT)
    chunks = [AIMessageChunk(content="Issued "), AIMessageChunk(content="on Monday.")]
    await chat.asave_context({"input": "My refund?"}, {"response": chunks})  # pyright: ignore[reportArgumentType]
    assert await _answers(memory, user) == ["user: My refund?\nassistant: Issued on Monday."]


async def test_chunks_of_different_messages_are_refused(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    mixed = [AIMessageChunk(content="Issued"), HumanMessageChunk(content="thanks")]
    with pytest.raises(ValidationError, match="one message"):
        await arecord_exchange(memory, "My refund?", mixed, agent_id=AGENT, config=_config(user))
    assert await _answers(memory, user) == []
