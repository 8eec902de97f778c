"""`EpisodicConversationMemory`: ConversationChain's default prompt, return_messages, old name."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator

import pytest
from episodex import EpisodicMemory as Episodes
from langchain_classic.chains import ConversationChain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_episodex import EpisodicConversationMemory, EpisodicMemory
from lc_fakes import RecordingChatModel

AGENT = "assistant"


@pytest.fixture(autouse=True)
def _classic_chains_are_deprecated() -> Iterator[None]:
    # ConversationChain is deprecated upstream; these tests cover the users who still run it.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)
        yield


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def test_default_conversation_chain_prompt_gets_the_block(memory: Episodes) -> None:
    user = _user()
    monday = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="monday"
    )
    assert monday.memory_variables == ["history"]
    first = RecordingChatModel(responses=[AIMessage("Noted, no peanuts.")], received=[])
    out = ConversationChain(llm=first, memory=monday).invoke({"input": "I am allergic to peanuts."})
    assert out["response"] == "Noted, no peanuts."
    assert memory.store.count(user_id=user, agent_id=AGENT) == 1
    (stored,) = memory.store.read_recent(1, user_id=user, agent_id=AGENT)
    assert stored["long_summary_text"] == (
        "user: I am allergic to peanuts.\nassistant: Noted, no peanuts."
    )

    friday = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="friday"
    )
    second = RecordingChatModel(responses=[AIMessage("Try a lentil curry.")], received=[])
    ConversationChain(llm=second, memory=friday).invoke({"input": "Suggest a peanut-free dinner."})
    prompt = second.prompt_text()
    # The default prompt's "Current conversation:" section holds the recalled episode.
    assert "Current conversation:\n<recalled_episodes>" in prompt
    assert "user: I am allergic to peanuts." in prompt
    assert memory.store.count(user_id=user, agent_id=AGENT) == 2


def test_return_messages_fills_a_messages_placeholder(memory: Episodes) -> None:
    user = _user()
    mem = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, return_messages=True
    )
    assert mem.load_memory_variables({"input": "anything?"}) == {"history": []}
    mem.save_context({"input": "My flight is LX 318 on May 3."}, {"response": "Saved it."})

    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{input}")]
    )
    model = RecordingChatModel(responses=[AIMessage("LX 318, May 3.")], received=[])
    ConversationChain(llm=model, memory=mem, prompt=prompt).invoke(
        {"input": "Which flight am I on?"}
    )
    sent = model.received[-1]
    assert isinstance(sent[0], SystemMessage)
    assert str(sent[0].content).startswith("<recalled_episodes>")
    assert "My flight is LX 318 on May 3." in str(sent[0].content)
    assert isinstance(sent[-1], HumanMessage) and sent[-1].text == "Which flight am I on?"


def test_old_name_still_works_with_its_old_prompt_variable(memory: Episodes) -> None:
    user = _user()
    old = EpisodicMemory(memory=memory, user_id=user, agent_id=AGENT)
    assert isinstance(old, EpisodicConversationMemory)
    assert old.memory_variables == ["recalled_episodes"]
    old.save_context({"input": "Ship to 4 Rue Cler."}, {"text": "Address saved."})
    block = old.load_memory_variables({"input": "shipping address?"})["recalled_episodes"]
    assert "4 Rue Cler" in block
