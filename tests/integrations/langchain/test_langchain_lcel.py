from __future__ import annotations

import uuid
from typing import Any

import pytest
from episodex import ConfigurationError, ValidationError
from episodex import EpisodicMemory as Episodes
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_episodex import arecord_exchange, from_langchain, recall_episodes, record_exchange
from lc_fakes import RecordingChatModel

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You are a travel assistant.\n{recalled_episodes}"), ("human", "{question}")]
)


def _config(user: str, conversation: str) -> Any:
    return {"configurable": {"user_id": user, "conversation_id": conversation}}


def _chain(memory: Episodes, model: RecordingChatModel) -> Any:
    recall = recall_episodes(memory, input_key="question", agent_id="travel")
    return RunnablePassthrough.assign(recalled_episodes=recall) | PROMPT | model


def test_sync_chain_recalls_what_was_recorded(memory: Episodes) -> None:
    user = f"user-{uuid.uuid4().hex}"
    model = RecordingChatModel(responses=[AIMessage("Booked: window seat to Oslo.")], received=[])
    chain = _chain(memory, model)
    question = "Book me a window seat to Oslo"
    answer = chain.invoke({"question": question}, config=_config(user, "c1"))
    assert model.received[0][0].content == "You are a travel assistant.\n"
    record_exchange(memory, question, answer, agent_id="travel", config=_config(user, "c1"))

    later = "Which seat did I book to Oslo?"
    block = recall_episodes(memory, input_key="question", agent_id="travel").invoke(
        {"question": later}, config=_config(user, "c2")
    )
    assert "Book me a window seat to Oslo" in block and "Booked: window seat to Oslo." in block
    model2 = RecordingChatModel(responses=[AIMessage("A window seat.")], received=[])
    _chain(memory, model2).invoke({"question": later}, config=_config(user, "c2"))
    assert model2.received[0][0].content == f"You are a travel assistant.\n{block}"

    # Another user, same question: nothing recalled.
    other = RecordingChatModel(responses=[AIMessage("?")], received=[])
    _chain(memory, other).invoke(
        {"question": later}, config=_config(f"user-{uuid.uuid4().hex}", "c1")
    )
    assert other.received[0][0].content == "You are a travel assistant.\n"


async def test_async_chain_and_record(memory: Episodes) -> None:
    user = f"user-{uuid.uuid4().hex}"
    model = RecordingChatModel(responses=[AIMessage("Your hotel in Rome is booked.")], received=[])
    chain = _chain(memory, model)
    answer = await chain.ainvoke({"question": "Book a hotel in Rome"}, config=_config(user, "c1"))
    point = await arecord_exchange(
        memory,
        "Book a hotel in Rome",
        answer,
        user_id=user,
        agent_id="travel",
        conversation_id="c1",
        tools_invoked=["hotels"],
    )
    stored = await memory.get(point, user_id=user, agent_id="travel")
    assert stored["tools_invoked"] == ["hotels"]
    assert stored["long_summary_text"] == (
        "user: Book a hotel in Rome\nassistant: Your hotel in Rome is booked.\n  [called hotels]"
    )

    model2 = RecordingChatModel(responses=[AIMessage("Rome.")], received=[])
    block = await recall_episodes(memory, agent_id="travel").ainvoke(
        "hotel in Rome", config=_config(user, "c1")
    )
    await _chain(memory, model2).ainvoke({"question": "hotel in Rome"}, config=_config(user, "c1"))
    assert "<same_conversation" in block
    assert model2.received[0][0].content == f"You are a travel assistant.\n{block}"


async def test_from_langchain_gives_the_core_llm_shape() -> None:
    llm = from_langchain(GenericFakeChatModel(messages=iter([AIMessage("Paris")])))
    assert await llm("Capital of France?") == "Paris"
    with pytest.raises(ConfigurationError, match="chat model"):
        from_langchain("gpt-4o")  # type: ignore[arg-type]


def test_bad_input_raises_typed_errors(memory: Episodes) -> None:
    with pytest.raises(ConfigurationError, match="EpisodicMemory"):
        recall_episodes("./memory")
    with pytest.raises(ConfigurationError, match="unknown recall option"):
        recall_episodes(memory, recall_options={"k": 2})
    recall = recall_episodes(memory, agent_id="travel")
    with pytest.raises(ConfigurationError, match="no user_id"):
        recall.invoke({"input": "hi"})
    with pytest.raises(ValidationError, match="no 'input'"):
        recall.invoke({"question": "hi"}, config=_config("u", "c"))
    assert recall.invoke({"input": "  "}, config=_config("u", "c")) == ""
    with pytest.raises(ConfigurationError, match="no conversation_id"):
        record_exchange(memory, "q", "a", user_id="u", agent_id="travel")
    with pytest.raises(ValidationError, match="no text"):
        record_exchange(memory, "", "a", user_id="u", agent_id="travel", conversation_id="c")
