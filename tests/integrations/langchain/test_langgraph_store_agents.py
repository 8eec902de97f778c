"""`EpisodexStore` as the long-term store of a LangChain v1 agent and of a LangGraph graph."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodexStore
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from lc_fakes import RecordingChatModel


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(path=tmp_path / "store")
    yield mem
    mem.close()


@dataclass
class UserContext:
    user_id: str


@tool
def save_fact(fact: str, runtime: ToolRuntime[UserContext, dict[str, Any]]) -> str:
    """Remember a fact about the user."""
    store = runtime.store
    assert store is not None
    user = runtime.context.user_id
    key = f"fact-{len(store.search((user, 'facts'), limit=100))}"
    store.put((user, "facts"), key, {"text": fact})
    return f"saved {key}"


@tool
def search_facts(query: str, runtime: ToolRuntime[UserContext, dict[str, Any]]) -> str:
    """Search what is remembered about the user."""
    store = get_store()  # LangGraph's accessor reaches the same store
    hits = store.search((runtime.context.user_id, "facts"), query=query, limit=1)
    return "; ".join(str(h.value["text"]) for h in hits) or "nothing remembered"


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def run_agent(agent: Any, text: str, user: str) -> dict[str, Any]:
    return agent.invoke({"messages": [HumanMessage(text)]}, context=UserContext(user_id=user))


async def arun_agent(agent: Any, text: str, user: str) -> dict[str, Any]:
    return await agent.ainvoke(
        {"messages": [HumanMessage(text)]}, context=UserContext(user_id=user)
    )


def test_create_agent_tools_write_and_search_the_store(memory: EpisodicMemory) -> None:
    store = EpisodexStore(memory, agent_id="assistant", index={"fields": ["text"]})
    model = RecordingChatModel(
        responses=[
            call("save_fact", {"fact": "Alice is vegetarian."}, "c1"),
            AIMessage(content="Noted."),
            call("save_fact", {"fact": "Bob eats everything."}, "c2"),
            AIMessage(content="Noted, Bob."),
            call("search_facts", {"query": "what does she eat"}, "c3"),
            AIMessage(content="You are vegetarian."),
        ]
    )
    agent = create_agent(
        model, tools=[save_fact, search_facts], context_schema=UserContext, store=store
    )
    run_agent(agent, "I am vegetarian.", "alice")
    run_agent(agent, "I eat everything.", "bob")
    result = run_agent(agent, "What do I eat?", "alice")

    # The store holds each user's fact under that user, and nothing crossed over.
    alice = store.get(("alice", "facts"), "fact-0")
    bob = store.get(("bob", "facts"), "fact-0")
    assert alice is not None and alice.value == {"text": "Alice is vegetarian."}
    assert bob is not None and bob.value == {"text": "Bob eats everything."}
    assert store.items.count(user_id="alice", agent_id="assistant") == 1
    # The model was sent the tool's answer from the store: Alice's fact, never Bob's.
    last_prompt = model.received[-1]
    tool_answers = [m for m in last_prompt if isinstance(m, ToolMessage)]
    assert [m.text for m in tool_answers] == ["Alice is vegetarian."]
    assert result["messages"][-1].text == "You are vegetarian."


async def test_create_agent_async_uses_the_store(memory: EpisodicMemory) -> None:
    store = EpisodexStore(memory, agent_id="assistant", index={"fields": ["text"]})
    model = RecordingChatModel(
        responses=[
            call("save_fact", {"fact": "Carol flies from Oslo."}, "c1"),
            AIMessage(content="Saved."),
            call("search_facts", {"query": "airport"}, "c2"),
            AIMessage(content="Oslo."),
        ]
    )
    agent = create_agent(
        model, tools=[save_fact, search_facts], context_schema=UserContext, store=store
    )
    await arun_agent(agent, "I fly from Oslo.", "carol")
    await arun_agent(agent, "Which airport?", "carol")
    item = await store.aget(("carol", "facts"), "fact-0")
    assert item is not None and item.value == {"text": "Carol flies from Oslo."}
    tool_answers = [m.text for m in model.received[-1] if isinstance(m, ToolMessage)]
    assert tool_answers == ["Carol flies from Oslo."]


class GraphState(TypedDict):
    user: str
    question: str
    answer: str


def remember(state: GraphState, *, store: BaseStore) -> dict[str, Any]:
    store.put((state["user"], "notes"), "last-question", {"text": state["question"]})
    return {}


def recall(state: GraphState, *, store: BaseStore) -> dict[str, Any]:
    hits = store.search((state["user"],), query=state["question"], limit=1)
    return {"answer": hits[0].value["text"] if hits else ""}


def test_langgraph_nodes_share_the_store_across_runs(memory: EpisodicMemory) -> None:
    store = EpisodexStore(memory, agent_id="graph")
    builder = StateGraph(GraphState)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=store)

    first = graph.invoke({"user": "dana", "question": "Where is my kayak stored?", "answer": ""})
    assert first["answer"] == ""  # nothing remembered yet
    second = graph.invoke({"user": "dana", "question": "kayak?", "answer": ""})
    assert second["answer"] == "Where is my kayak stored?"
    other = graph.invoke({"user": "erin", "question": "kayak?", "answer": ""})
    assert other["answer"] == ""  # another user's namespace is never searched
    stored = store.get(("dana", "notes"), "last-question")
    assert stored is not None and stored.value == {"text": "kayak?"}
