"""A streamed run the consumer stopped reading after the answer is still recorded, once.

`create_agent` records a run in its `after_agent` step. A consumer that stops reading the
stream once it has the answer (a chat UI whose user left, a client that breaks out of
`for chunk in agent.stream(...)` or closes the `astream` generator) ends the run before that
step: on a checkpointed thread the question and the answer the user saw stay in the history,
but the next run begins after them, so that exchange was never recorded by any run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver

REFUND = "The refund was sent on Monday to your card."
INVOICE = "The invoice is in your inbox."


class StreamingModel(GenericFakeChatModel):
    """The fake chat model that streams its answers token by token."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:  # pyright: ignore[reportIncompatibleMethodOverride]
        # create_agent binds its tools; these answers call none.
        bound: Runnable[LanguageModelInput, AIMessage] = self  # pyright: ignore[reportAssignmentType]
        return bound


def _agent(memory: EpisodicMemory) -> tuple[EpisodicMemoryMiddleware, Any]:
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    answers: Iterator[AIMessage | str] = iter([AIMessage(REFUND), AIMessage(INVOICE)])
    agent = create_agent(
        StreamingModel(messages=answers),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    return middleware, agent


def _summaries(memory: EpisodicMemory, user: str) -> list[str]:
    items = memory.store.read_recent(10, user_id=user, agent_id="support")
    return [e["long_summary_text"] for e in sorted(items, key=lambda e: e["start_index"])]


def _both_recorded_once(memory: EpisodicMemory, user: str) -> None:
    first, second = _summaries(memory, user)
    assert first == f"user: Where is my refund?\nassistant: {REFUND}"
    assert second == f"user: And the invoice?\nassistant: {INVOICE}"


def _ask(user: str) -> tuple[dict[str, Any], RunnableConfig, dict[str, str]]:
    question = {"messages": [HumanMessage("Where is my refund?")]}
    return question, {"configurable": {"thread_id": user}}, {"user_id": user}


def test_a_sync_stream_stopped_after_the_answer_is_recorded_by_the_next_run(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    question, config, context = _ask(user)
    seen = ""
    for update in agent.stream(question, config, context=context, stream_mode="updates"):
        if "model" in update:
            seen = update["model"]["messages"][-1].text
            break  # the user has the answer; the client goes away
    assert seen == REFUND
    follow_up = {"messages": [HumanMessage("And the invoice?")]}
    for _ in agent.stream(follow_up, config, context=context, stream_mode="updates"):
        pass
    assert middleware.flush() == 0
    _both_recorded_once(memory, user)


async def test_an_async_stream_closed_after_the_answer_is_recorded_by_the_next_run(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    question, config, context = _ask(user)
    seen = ""
    stream = agent.astream(question, config, context=context, stream_mode="updates")
    async for update in stream:
        if "model" in update:
            seen = update["model"]["messages"][-1].text
            break
    await stream.aclose()  # what `async for` leaves to the garbage collector
    assert seen == REFUND
    async for _ in agent.astream(
        {"messages": [HumanMessage("And the invoice?")]}, config, context=context
    ):
        pass
    assert await middleware.aflush() == 0
    _both_recorded_once(memory, user)


async def test_runs_read_to_the_end_are_recorded_once_each(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    question, config, context = _ask(user)
    async for _ in agent.astream(question, config, context=context, stream_mode="messages"):
        pass
    await agent.ainvoke({"messages": [HumanMessage("And the invoice?")]}, config, context=context)
    assert await middleware.aflush() == 0
    _both_recorded_once(memory, user)


def test_a_stream_stopped_before_the_answer_is_recorded_with_the_next_run(
    memory: EpisodicMemory,
) -> None:
    # The first question got no answer: the next run answers it, and is recorded with it.
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    question, config, context = _ask(user)
    for _ in agent.stream(question, config, context=context, stream_mode="updates"):
        break  # before the model was called
    agent.invoke({"messages": [HumanMessage("And the invoice?")]}, config, context=context)
    assert middleware.flush() == 0
    assert _summaries(memory, user) == [
        f"user: Where is my refund?\nuser: And the invoice?\nassistant: {REFUND}"
    ]
