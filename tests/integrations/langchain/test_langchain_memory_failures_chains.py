"""A memory failure never costs a classic chain, an LCEL chain or a tool call its answer.

The middleware already went on without memory when recall or recording failed; the other
LangChain paths did not:

- `EpisodicConversationMemory.save_context` runs after the model answered, inside the chain's
  call: a failing write raised out of `chain.invoke`, and the answer was lost;
  `load_memory_variables` runs before the model: a failing recall failed the whole call.
- the `recall_episodes` runnable raised out of the LCEL chain it feeds.
- the memory search tool raised out of the tool call, which LangGraph's `ToolNode` re-raises:
  the agent run failed.

Each now logs the failure and goes on without memory (an empty block, or a tool answer that
says memory is unavailable). The engine is the real in-RAM qdrant-client one, made to fail.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import FailingEngine
from langchain_classic.chains import ConversationChain
from langchain_core.messages import AIMessage
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_episodex import (
    EpisodicConversationMemory,
    create_memory_search_tool,
    recall_episodes,
)
from lc_fakes import RecordingChatModel

AGENT = "assistant"


# The classic chains are deprecated upstream; these tests cover the users who still run them.
pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)


def _model(*answers: str) -> RecordingChatModel:
    return RecordingChatModel(responses=[AIMessage(a) for a in answers], received=[])


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def _failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "langchain_episodex" and r.levelno >= logging.WARNING
    ]


def _classic_chain(memory: EpisodicMemory, model: Any) -> tuple[Any, EpisodicConversationMemory]:
    """A classic `ConversationChain` on episodex's conversation memory (a new user's), and it."""
    chat = EpisodicConversationMemory(
        memory=memory, user_id=_user(), agent_id=AGENT, conversation_id="c1"
    )
    prompt = PromptTemplate.from_template("Memory:\n{history}\nHuman: {input}\nAI:")
    return ConversationChain(llm=model, memory=chat, prompt=prompt), chat


def test_a_classic_chain_answers_when_memory_fails(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    model = _model("Your refund was issued on Monday.")
    chain, _ = _classic_chain(memory, model)
    engine.reads = engine.writes = True
    out = chain.invoke({"input": "Where is my refund?"})
    assert out["response"] == "Your refund was issued on Monday."
    assert "Memory:\n\nHuman: Where is my refund?" in model.prompt_text()
    logged = _failures(caplog)
    assert any("recall" in m for m in logged) and any("record" in m for m in logged)


async def test_a_classic_chain_answers_when_memory_fails_async(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    chain, chat = _classic_chain(memory, _model("Monday."))
    engine.reads = engine.writes = True
    out = await chain.ainvoke({"input": "Where is my refund?"})
    assert out["response"] == "Monday."
    # Recall failed, where the conversation stands could not be read, recording failed.
    logged = _failures(caplog)
    assert len(logged) == 3
    assert "recall" in logged[0] and "counting on from" in logged[1] and "record" in logged[2]
    # Once the engine is back, the memory works again, and the exchange kept while it was
    # down is written too.
    engine.reads = engine.writes = False
    await chat.asave_context({"input": "Where is my refund?"}, {"response": "Monday."})
    assert await memory.count(user_id=chat.user_id or "", agent_id=AGENT) == 2


async def test_an_lcel_chain_answers_when_recall_fails(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    prompt = PromptTemplate.from_template("Memory:\n{recalled_episodes}\nHuman: {question}")
    recall = recall_episodes(memory, input_key="question", user_id=_user(), agent_id=AGENT)
    model = _model("Monday.", "Tuesday.")
    chain = RunnablePassthrough.assign(recalled_episodes=recall) | prompt | model
    engine.reads = engine.writes = True
    answer = chain.invoke({"question": "Where is my refund?"})
    assert answer.content == "Monday."
    assert "Memory:\n\nHuman: Where is my refund?" in model.prompt_text()
    answer = await chain.ainvoke({"question": "Where is my refund?"})
    assert answer.content == "Tuesday."
    assert len(_failures(caplog)) == 2


async def test_the_memory_tool_answers_when_recall_fails(
    failing: tuple[EpisodicMemory, FailingEngine], caplog: pytest.LogCaptureFixture
) -> None:
    memory, engine = failing
    tool = create_memory_search_tool(memory, user_id=_user(), agent_id=AGENT)
    engine.reads = engine.writes = True
    answer = tool.invoke({"query": "refund"})
    assert isinstance(answer, str) and "unavailable" in answer.lower()
    answer = await tool.ainvoke({"query": "refund"})
    assert isinstance(answer, str) and "unavailable" in answer.lower()
    assert len(_failures(caplog)) == 2
