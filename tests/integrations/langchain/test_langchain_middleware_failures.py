"""Memory failures never cost the user the model's answer (issue 13, defects 3 and 4)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from episodex import EngineUnavailableError, EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import RecordingChatModel

SYSTEM = "You are a support agent."


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def _model(*answers: str) -> RecordingChatModel:
    return RecordingChatModel(responses=[AIMessage(a) for a in answers], received=[])


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _fail(*args: object, **kwargs: object) -> Any:
    raise EngineUnavailableError("Qdrant is restarting")


def _count(memory: EpisodicMemory, user: str) -> int:
    return memory.store.count(user_id=user, agent_id="support")


def test_record_failure_returns_the_answer_and_the_episode_is_written_later(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        _model("Your refund was issued on Monday."),
        system_prompt=SYSTEM,
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    with monkeypatch.context() as patch:
        patch.setattr(memory.store, "memorize_many", _fail)
        with caplog.at_level(logging.WARNING):
            out = agent.invoke(_ask("Where is my refund?"), context={"user_id": user})  # pyright: ignore[reportArgumentType]
    assert out["messages"][-1].text == "Your refund was issued on Monday."
    assert "kept for retry" in caplog.text
    stats = middleware.stats()
    assert stats is not None
    assert (stats.pending, stats.write_failures, stats.recorded) == (1, 1, 0)
    assert "Qdrant is restarting" in (stats.last_error or "")
    assert _count(memory, user) == 0

    # The store is back: flush writes the queued episode, exactly once, with its texts.
    assert middleware.flush() == 0
    assert _count(memory, user) == 1
    assert middleware.flush() == 0
    assert _count(memory, user) == 1
    stored = memory.store.read_recent(1, user_id=user, agent_id="support")[0]
    assert stored["short_summary_text"] == "Where is my refund?"
    assert "Your refund was issued on Monday." in stored["long_summary_text"]


async def test_async_record_failure_is_retried_before_the_next_episode(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        _model("First answer.", "Second answer."),
        system_prompt=SYSTEM,
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    with monkeypatch.context() as patch:
        patch.setattr(memory.store, "memorize_many", _fail)
        out = await agent.ainvoke(_ask("first question"), context={"user_id": user})  # pyright: ignore[reportArgumentType]
    assert out["messages"][-1].text == "First answer."
    out = await agent.ainvoke(_ask("second question"), context={"user_id": user})  # pyright: ignore[reportArgumentType]
    assert out["messages"][-1].text == "Second answer."
    texts = sorted(
        r["short_summary_text"]
        for r in memory.store.read_recent(10, user_id=user, agent_id="support")
    )
    assert texts == ["first question", "second question"]
    stats = middleware.stats()
    assert stats is not None and (stats.pending, stats.recorded) == (0, 2)


def test_recall_failure_runs_the_agent_without_memory(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    model = _model("Here is the answer.")
    agent = create_agent(
        model, system_prompt=SYSTEM, middleware=[middleware], context_schema=EpisodicContext
    )
    with monkeypatch.context() as patch:
        patch.setattr(memory.store, "recall", _fail)
        with caplog.at_level(logging.WARNING):
            out = agent.invoke(_ask("What did we agree on?"), context={"user_id": user})  # pyright: ignore[reportArgumentType]
    assert out["messages"][-1].text == "Here is the answer."
    assert out["recalled_episodes"] == ""
    assert isinstance(model.received[0][0], SystemMessage)
    assert model.received[0][0].text == SYSTEM  # no block, no error text
    assert "recall failed" in caplog.text
    assert middleware.recall_failures == 1
    stats = middleware.stats()
    assert stats is not None and stats.recall_failures == 1
    assert _count(memory, user) == 1  # the run itself was still recorded


def test_deferred_recording_returns_first_and_flush_drains(memory: EpisodicMemory) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", deferred=True)
    agent = create_agent(
        _model("a1", "a2", "a3"),
        system_prompt=SYSTEM,
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    for question in ("q1", "q2", "q3"):
        agent.invoke(_ask(question), context={"user_id": user, "conversation_id": "c"})  # pyright: ignore[reportArgumentType]
    assert middleware.flush() == 0
    texts = sorted(
        r["short_summary_text"]
        for r in memory.store.read_recent(10, user_id=user, agent_id="support")
    )
    assert texts == ["q1", "q2", "q3"]


def test_same_thread_history_is_not_recalled_but_other_threads_are(
    memory: EpisodicMemory,
) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    model = _model("Noted: you prefer email.", "Sent by email.", "Email it is.")
    agent = create_agent(
        model,
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        context_schema=EpisodicContext,
    )
    thread_a: Any = {"configurable": {"thread_id": f"a-{user}"}}
    context = {"user_id": user}
    agent.invoke(_ask("I prefer email for receipts"), config=thread_a, context=context)  # pyright: ignore[reportArgumentType]
    out = agent.invoke(_ask("Send my receipt, email please"), config=thread_a, context=context)  # pyright: ignore[reportArgumentType]
    # Turn 1 is in the thread's messages: shown once, as history, not again as memory.
    assert out["recalled_episodes"] == ""
    assert model.prompt_text(1).count("I prefer email for receipts") == 1
    # A new thread of the same user does not have it in its history: it is recalled.
    thread_b: Any = {"configurable": {"thread_id": f"b-{user}"}}
    out = agent.invoke(
        _ask("Which channel do I prefer for receipts?"),  # pyright: ignore[reportArgumentType]
        config=thread_b,
        context=context,  # pyright: ignore[reportArgumentType]
    )
    assert "I prefer email for receipts" in out["recalled_episodes"]
    assert "I prefer email for receipts" in model.prompt_text(2)


def test_same_conversation_without_checkpointer_is_still_recalled(memory: EpisodicMemory) -> None:
    # Without a checkpointer the model sees only this run's input, so an earlier run of the
    # same conversation is not in its history and must come back from memory.
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    model = _model("Noted.", "Aisle seat booked.")
    agent = create_agent(
        model, system_prompt=SYSTEM, middleware=[middleware], context_schema=EpisodicContext
    )
    context = {"user_id": user, "conversation_id": "trip"}
    agent.invoke(_ask("I want an aisle seat"), context=context)  # pyright: ignore[reportArgumentType]
    out = agent.invoke(_ask("Book my usual seat"), context=context)  # pyright: ignore[reportArgumentType]
    assert "I want an aisle seat" in out["recalled_episodes"]
    assert "I want an aisle seat" in model.prompt_text(1)
