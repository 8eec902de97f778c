"""One id rule for every LangChain piece: explicit > runtime context > configurable > thread id."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory
from langchain.agents import create_agent
from langchain_classic.chains import ConversationChain
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnablePassthrough
from langchain_episodex import (
    EpisodicContext,
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
    EpisodicRetriever,
    create_memory_search_tool,
    recall_episodes,
    record_exchange,
)
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel, sent_text

AGENT = "pets"


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    question = next(m.text for m in reversed(messages) if isinstance(m, HumanMessage))
    return AIMessage(f"Noted: {question}")


def _users() -> tuple[str, str]:
    tag = uuid.uuid4().hex
    return f"alice-{tag}", f"bob-{tag}"


def _ask(text: str) -> Any:  # the agent's input state
    return {"messages": [HumanMessage(text)]}


def _system(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.text) for m in messages if isinstance(m, SystemMessage))


def test_agent_batch_with_per_user_configs(memory: EpisodicMemory) -> None:
    alice, bob = _users()
    model = EchoChatModel(answer=_answer)
    agent = create_agent(
        model, middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT)], system_prompt="Hi."
    )

    def configs(conversation: str) -> list[RunnableConfig]:
        return [
            {"configurable": {"user_id": alice, "conversation_id": f"{conversation}-a"}},
            {"configurable": {"user_id": bob, "conversation_id": f"{conversation}-b"}},
        ]

    first = agent.batch(
        [_ask("My cat is called Tomasz."), _ask("My parrot is called Kiwi.")],
        config=configs("monday"),
    )
    assert [r["messages"][-1].text for r in first] == [
        "Noted: My cat is called Tomasz.",
        "Noted: My parrot is called Kiwi.",
    ]
    assert memory.store.count(user_id=alice, agent_id=AGENT) == 1
    assert memory.store.count(user_id=bob, agent_id=AGENT) == 1
    (alice_ep,) = memory.store.read_recent(1, user_id=alice, agent_id=AGENT)
    assert alice_ep["short_summary_text"] == "My cat is called Tomasz."
    assert alice_ep["conversation_id"] == "monday-a"

    model.received.clear()
    second = agent.batch(
        [_ask("What is my pet called?"), _ask("What is my pet called?")],
        config=configs("friday"),
    )
    assert "Tomasz" in second[0]["recalled_episodes"]
    assert "Kiwi" not in second[0]["recalled_episodes"]
    assert "Kiwi" in second[1]["recalled_episodes"]
    assert "Tomasz" not in second[1]["recalled_episodes"]
    # What each model call was sent: its own user's memory and never the other's.
    systems = sorted(_system(m) for m in model.received)
    assert len(systems) == 2
    assert sum("Tomasz" in s and "Kiwi" not in s for s in systems) == 1
    assert sum("Kiwi" in s and "Tomasz" not in s for s in systems) == 1
    assert memory.store.count(user_id=alice, agent_id=AGENT) == 2
    assert memory.store.count(user_id=bob, agent_id=AGENT) == 2


def test_runtime_context_beats_configurable_and_argument_beats_both(
    memory: EpisodicMemory,
) -> None:
    alice, bob = _users()
    model = EchoChatModel(answer=_answer)
    agent = create_agent(
        model,
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT)],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    agent.invoke(
        _ask("I live in Porto."),
        config={"configurable": {"user_id": bob, "thread_id": "t-ctx"}},
        context={"user_id": alice},
    )
    (stored,) = memory.store.read_recent(1, user_id=alice, agent_id=AGENT)
    assert stored["conversation_id"] == "t-ctx"  # no conversation id anywhere: the thread's
    assert memory.store.count(user_id=bob, agent_id=AGENT) == 0

    # An id given to the middleware is explicit: it wins over context and config.
    pinned = create_agent(
        model,
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT, user_id=bob)],
        context_schema=EpisodicContext,
    )
    pinned.invoke(
        _ask("I live in Lyon."),
        config={"configurable": {"user_id": alice, "conversation_id": "c-cfg"}},
        context={"user_id": alice},
    )
    (stored,) = memory.store.read_recent(1, user_id=bob, agent_id=AGENT)
    assert stored["short_summary_text"] == "I live in Lyon."
    assert stored["conversation_id"] == "c-cfg"
    assert memory.store.count(user_id=alice, agent_id=AGENT) == 1


def test_retriever_and_lcel_take_ids_from_the_config(memory: EpisodicMemory) -> None:
    alice, bob = _users()
    record_exchange(
        memory,
        "Book me a window seat to Oslo.",
        "Booked, window seat.",
        config={"configurable": {"user_id": alice, "agent_id": AGENT, "conversation_id": "c1"}},
    )
    retriever = EpisodicRetriever(memory=memory, agent_id=AGENT)
    docs = retriever.invoke("window seat", config={"configurable": {"user_id": alice}})
    assert [d.page_content for d in docs] == ["Book me a window seat to Oslo."]
    assert retriever.invoke("window seat", config={"configurable": {"user_id": bob}}) == []
    # An id given to the call is explicit, so it wins over the config.
    assert retriever.invoke("window seat", config={"configurable": {"user_id": bob}}, user_id=alice)
    with pytest.raises(ConfigurationError, match="no user_id"):
        retriever.invoke("window seat")

    recall = recall_episodes(memory, agent_id=AGENT)
    chain = RunnablePassthrough.assign(block=recall)
    out = chain.invoke({"input": "seat"}, config={"configurable": {"user_id": alice}})
    assert "window seat to Oslo" in out["block"]
    assert chain.invoke({"input": "seat"}, config={"configurable": {"user_id": bob}})["block"] == ""


# ConversationChain is deprecated by LangChain; it is still what classic-chain users run.
@pytest.mark.filterwarnings("ignore::langchain_core._api.LangChainDeprecationWarning")
def test_sync_memory_is_accepted_everywhere() -> None:
    sync = SyncEpisodicMemory(location=":memory:")
    try:
        user = f"u-{uuid.uuid4().hex}"
        config: RunnableConfig = {"configurable": {"user_id": user, "conversation_id": "c1"}}
        record_exchange(sync, "My locker code is 4512.", "Saved.", agent_id=AGENT, config=config)
        assert sync.count(user_id=user, agent_id=AGENT) == 1
        any_memory: Any = sync  # the pydantic fields are typed with the core class it unwraps to

        retriever = EpisodicRetriever(memory=any_memory, user_id=user, agent_id=AGENT)
        assert retriever.invoke("locker code")[0].page_content == "My locker code is 4512."
        block = recall_episodes(sync, agent_id=AGENT).invoke("locker", config=config)
        assert "4512" in block
        tool = create_memory_search_tool(sync, user_id=user, agent_id=AGENT)
        assert "4512" in tool.invoke({"query": "locker code"})

        classic = EpisodicConversationMemory(memory=any_memory, user_id=user, agent_id=AGENT)
        assert "4512" in classic.load_memory_variables({"input": "locker code?"})["history"]

        model = EchoChatModel(answer=_answer)
        chain = ConversationChain(llm=model, memory=classic)
        chain.invoke({"input": "What is my locker code?"})
        assert "4512" in sent_text(model.received[-1])

        agent = create_agent(
            model, middleware=[EpisodicMemoryMiddleware(sync, agent_id=AGENT, user_id=user)]
        )
        out = asyncio.run(agent.ainvoke(_ask("Remind me of my locker code.")))
        assert "4512" in out["recalled_episodes"]
        # The record from the chain and the agent run are stored too.
        assert sync.count(user_id=user, agent_id=AGENT) == 3
    finally:
        sync.close()
