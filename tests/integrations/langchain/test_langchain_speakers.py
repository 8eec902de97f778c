"""Every LangChain write path stores who spoke: roles, and a message's `name`, never a tool's.

The middleware (a `create_agent` run), the classic memory and LCEL's `record_exchange` store
each episode's speakers, so a later recall that names a speaker ("what did Caroline say")
finds that speaker's episodes in the `speaker` streams.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from langchain.agents import create_agent
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_episodex import (
    EpisodicContext,
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
    arecord_exchange,
    record_exchange,
)
from lc_fakes import RecordingChatModel

AGENT = "support"


@pytest.fixture
def episodes() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return f"Order {order_id} shipped on Monday."


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def _speakers(memory: EpisodicMemory, user: str) -> list[list[str]]:
    return [item["speakers"] for item in memory.store.read_recent(10, user_id=user, agent_id=AGENT)]


def _run_agent(memory: EpisodicMemory, user: str, question: HumanMessage, conversation: str) -> Any:
    model = RecordingChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[{"name": "lookup_order", "args": {"order_id": "1234"}, "id": "call-1"}],
                name="Mel",
            ),
            AIMessage("Your order 1234 shipped on Monday.", name="Mel"),
        ],
        received=[],
    )
    agent = create_agent(
        model,
        tools=[lookup_order],
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT)],
        context_schema=EpisodicContext,
    )
    return agent.invoke(
        {"messages": [question]},  # pyright: ignore[reportArgumentType]
        context={"user_id": user, "conversation_id": conversation},  # pyright: ignore[reportArgumentType]
    )


def test_an_agent_run_stores_roles_and_names_but_not_tool_names(episodes: EpisodicMemory) -> None:
    user = _user()
    out = _run_agent(episodes, user, HumanMessage("Where is my order 1234?", name="Caroline"), "c1")
    assert out["messages"][-1].text == "Your order 1234 shipped on Monday."
    # The tool's message is named after the tool by LangGraph: its role counts, its name not.
    assert out["messages"][2].name == "lookup_order"
    assert _speakers(episodes, user) == [["user", "Caroline", "assistant", "Mel", "tool"]]


async def test_a_recall_naming_the_speaker_uses_the_speaker_streams(
    episodes: EpisodicMemory,
) -> None:
    user = _user()
    _run_agent(episodes, user, HumanMessage("Where is my order 1234?", name="Caroline"), "c1")
    _run_agent(episodes, user, HumanMessage("Where is my order 1234?", name="Melanie"), "c2")
    res = await episodes.recall(
        user_id=user, agent_id=AGENT, query="what did Caroline say about order 1234"
    )
    named = [i for i in res["previous_conversations"] if "speaker" in i["streams"]]
    assert [i["conversation_id"] for i in named] == ["c1"]


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        ("Caroline\nSmith", ["user", "Caroline Smith", "assistant", "Mel", "tool"]),
        ("  \n ", ["user", "assistant", "Mel", "tool"]),
        ("", ["user", "assistant", "Mel", "tool"]),
        ("x" * 600, ["user", "assistant", "Mel", "tool"]),
    ],
)
def test_an_odd_name_is_collapsed_or_left_out_and_the_run_is_still_recorded(
    episodes: EpisodicMemory, name: str, stored: list[str]
) -> None:
    user = _user()
    out = _run_agent(episodes, user, HumanMessage("Where is my order 1234?", name=name), "c1")
    assert out["messages"][-1].text == "Your order 1234 shipped on Monday."
    assert _speakers(episodes, user) == [stored]


@pytest.fixture
def _classic_chains_are_deprecated() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)
        yield


@pytest.mark.usefixtures("_classic_chains_are_deprecated")
def test_classic_memory_stores_speakers_from_strings_and_messages(
    episodes: EpisodicMemory,
) -> None:
    user = _user()
    memory = EpisodicConversationMemory(
        memory=episodes, user_id=user, agent_id=AGENT, conversation_id="c1"
    )
    memory.save_context({"input": "I am allergic to peanuts."}, {"response": "Noted."})
    # A chain whose output is a message (a chat model's) rather than a string.
    answer: dict[str, Any] = {"response": AIMessage("Congratulations!", name="Mel")}
    memory.save_context({"input": HumanMessage("I adopted a cat.", name="Caroline")}, answer)
    assert sorted(_speakers(episodes, user)) == [
        ["user", "Caroline", "assistant", "Mel"],
        ["user", "assistant"],
    ]


def test_record_exchange_stores_speakers_from_strings(episodes: EpisodicMemory) -> None:
    user = _user()
    record_exchange(
        episodes,
        "Book me a window seat to Oslo",
        "Booked.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="c1",
    )
    assert _speakers(episodes, user) == [["user", "assistant"]]


async def test_arecord_exchange_stores_message_names(episodes: EpisodicMemory) -> None:
    user = _user()
    await arecord_exchange(
        episodes,
        HumanMessage("Book a hotel in Rome", name="Caroline"),
        AIMessage("Your hotel in Rome is booked.", name="Travelbot"),
        user_id=user,
        agent_id=AGENT,
        conversation_id="c1",
        tools_invoked=["book_hotel"],
    )
    (item,) = episodes.store.read_recent(10, user_id=user, agent_id=AGENT)
    assert item["speakers"] == ["user", "Caroline", "assistant", "Travelbot"]
    assert item["tools_invoked"] == ["book_hotel"]
    res = await episodes.recall(user_id=user, agent_id=AGENT, query="what did Caroline book")
    assert "speaker" in res["previous_conversations"][0]["streams"]
