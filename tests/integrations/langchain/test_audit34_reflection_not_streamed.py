"""The reflection model's summaries are never streamed to the user as the agent's words.

`EpisodicMemoryMiddleware(reflection_model=chat_model)` asks the model for an episode's
summaries in the agent's `after_agent` step. The call inherited the run's callbacks, so with
`stream_mode="messages"` (how a chat UI streams an agent's answer) the summary came out of the
stream after the answer, token by token, as if the agent had said it.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware

ANSWER = "The refund was sent on Monday."
SHORT = "Refund status asked"
SUMMARY = f"{SHORT}\nThe user asked where the refund is; it was sent on Monday."


def _agent(memory: EpisodicMemory) -> tuple[EpisodicMemoryMiddleware, Any]:
    reflection = GenericFakeChatModel(messages=iter([AIMessage(SUMMARY)]))
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", reflection_model=reflection)
    agent = create_agent(
        GenericFakeChatModel(messages=iter([AIMessage(ANSWER)])),
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    return middleware, agent


def _question() -> dict[str, Any]:
    return {"messages": [HumanMessage("Where is my refund?")]}


def _recorded_short(memory: EpisodicMemory, user: str) -> list[str]:
    return [
        e["short_summary_text"]
        for e in memory.store.read_recent(5, user_id=user, agent_id="support")
    ]


def test_a_messages_stream_carries_the_answer_not_the_reflection(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    streamed = "".join(
        chunk.text
        for chunk, _ in agent.stream(_question(), context={"user_id": user}, stream_mode="messages")
    )
    assert streamed == ANSWER
    assert middleware.flush() == 0
    assert _recorded_short(memory, user) == [SHORT]  # the reflection still wrote the summary


async def test_an_async_stream_of_messages_and_updates_carries_no_reflection(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    streamed = ""
    async for mode, part in agent.astream(
        _question(), context={"user_id": user}, stream_mode=["messages", "updates"]
    ):
        if mode == "messages":
            message: BaseMessage = part[0]
            streamed += message.text
    assert streamed == ANSWER
    assert await middleware.aflush() == 0
    assert _recorded_short(memory, user) == [SHORT]
