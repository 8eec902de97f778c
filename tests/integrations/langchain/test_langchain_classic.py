from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator

import pytest
from episodex import ConfigurationError, ValidationError
from episodex import EpisodicMemory as Episodes
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage
from langchain_core.prompts import PromptTemplate
from langchain_episodex import EpisodicMemory
from lc_fakes import RecordingChatModel

AGENT = "assistant"
PROMPT = PromptTemplate.from_template("Memory:\n{recalled_episodes}\nHuman: {input}\nAI:")


@pytest.fixture(autouse=True)
def _classic_chains_are_deprecated() -> Iterator[None]:
    # LLMChain, ConversationChain and BaseMemory are deprecated upstream in favour of
    # create_agent; these tests exist to cover the users who still run them.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)
        yield


def _model(*answers: str) -> RecordingChatModel:
    return RecordingChatModel(responses=[AIMessage(a) for a in answers], received=[])


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def test_conversation_chain_recalls_an_earlier_conversation(memory: Episodes) -> None:
    user = _user()
    first = EpisodicMemory(memory=memory, user_id=user, agent_id=AGENT, conversation_id="c1")
    model = _model("Refund issued for order 1234.")
    chain = ConversationChain(llm=model, memory=first, prompt=PROMPT)
    out = chain.invoke({"input": "Please refund order 1234, the kettle arrived broken."})
    assert out["response"] == "Refund issued for order 1234."
    assert "Memory:\n\nHuman: Please refund" in model.prompt_text()  # nothing to recall yet

    second = EpisodicMemory(memory=memory, user_id=user, agent_id=AGENT, conversation_id="c2")
    block = second.load_memory_variables({"input": "What happened with my kettle refund?"})[
        "recalled_episodes"
    ]
    assert "Please refund order 1234" in block and "Refund issued for order 1234." in block
    model2 = _model("It was refunded.")
    ConversationChain(llm=model2, memory=second, prompt=PROMPT).invoke(
        {"input": "What happened with my kettle refund?"}
    )
    # The block reaches the model verbatim.
    assert f"Memory:\n{block}\nHuman: What happened" in model2.prompt_text()


async def test_llm_chain_async(memory: Episodes) -> None:
    user = _user()
    mem = EpisodicMemory(memory=memory, user_id=user, agent_id=AGENT, conversation_id="c1")
    prompt = PromptTemplate.from_template("{recalled_episodes}\nQuestion: {question}")
    model = _model("Your flight to Oslo leaves at 9.", "Oslo, at 9.")
    chain = LLMChain(llm=model, prompt=prompt, memory=mem)
    await chain.ainvoke({"question": "When does my flight to Oslo leave?"})
    assert await memory.count(user_id=user, agent_id=AGENT, conversation_id="c1") == 1

    expected = (await mem.aload_memory_variables({"question": "Remind me about the Oslo flight"}))[
        "recalled_episodes"
    ]
    out = await chain.ainvoke({"question": "Remind me about the Oslo flight"})
    assert "<same_conversation" in expected
    assert model.prompt_text() == f"{expected}\nQuestion: Remind me about the Oslo flight"
    assert out["text"] == "Oslo, at 9."


def test_users_never_share_episodes(memory: Episodes) -> None:
    alice, bob = _user(), _user()
    a = EpisodicMemory(memory=memory, user_id=alice, agent_id=AGENT, conversation_id="c1")
    a.save_context({"input": "My dog is called Biscuit"}, {"response": "Nice name!"})
    b = EpisodicMemory(memory=memory, user_id=bob, agent_id=AGENT, conversation_id="c1")
    assert b.load_memory_variables({"input": "What is my dog called?"}) == {"recalled_episodes": ""}
    assert (
        "Biscuit"
        in a.load_memory_variables({"input": "What is my dog called?"})["recalled_episodes"]
    )


async def test_clear_forgets_the_conversation(memory: Episodes) -> None:
    user = _user()
    mem = EpisodicMemory(memory=memory, user_id=user, agent_id=AGENT, memory_key="history")
    other = EpisodicMemory(memory=memory, user_id=user, agent_id=AGENT)
    assert mem.memory_variables == ["history"]
    assert mem.conversation_id != other.conversation_id
    await mem.asave_context({"input": "I prefer aisle seats"}, {"output": "Noted."})
    await other.asave_context({"input": "I prefer window seats"}, {"output": "Noted."})
    await mem.aclear()
    assert (
        await memory.count(user_id=user, agent_id=AGENT, conversation_id=mem.conversation_id) == 0
    )
    mem.clear()  # the sync twin; nothing left to forget
    assert await memory.count(user_id=user, agent_id=AGENT) == 1


def test_bad_input_raises_typed_errors(memory: Episodes) -> None:
    # Ids may come from the run, so a missing agent id is found when the memory is used.
    with pytest.raises(ConfigurationError, match="no agent_id"):
        EpisodicMemory(memory=memory, user_id="u").load_memory_variables({"input": "x"})
    with pytest.raises(ConfigurationError, match="unknown recall option"):
        EpisodicMemory(memory=memory, user_id="u", agent_id=AGENT, recall_options={"k": 1})
    mem = EpisodicMemory(memory=memory, user_id=_user(), agent_id=AGENT)
    with pytest.raises(ValidationError, match="input_key"):
        mem.load_memory_variables({"a": "x", "b": "y"})
    with pytest.raises(ValidationError, match="output_key"):
        mem.save_context({"input": "x"}, {"text": "y", "extra": "z"})
    # A blank message is not recorded, and not raised either: save_context runs after the
    # model answered (test_audit_langchain_adapters covers the chain).
    mem.save_context({"input": "  "}, {"text": "y"})
    assert mem.load_memory_variables({"input": "   "}) == {"recalled_episodes": ""}
