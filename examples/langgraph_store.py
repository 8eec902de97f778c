"""episodex as LangGraph's long-term store: `create_agent(..., store=EpisodexStore(memory))`.

The agent's tools save and search facts about the user through `runtime.store`. The store
keeps them as items beside the episodes, under the user named by the namespace's first label,
and `search(query=...)` is episodex's hybrid search (dense + BM25, fused in the engine). Items
outlive the process: the store is reopened at the end and still holds them.

    python examples/langgraph_store.py

Offline: a scripted chat model plays the tool calls (put a real one in its place); the store
is embedded Qdrant Edge in a temporary folder with the bundled embedding model.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodexStore


class ScriptedChatModel(FakeMessagesListChatModel):
    """Plays back scripted answers, tool calls included; stands in for a real model offline."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


@dataclass
class User:
    user_id: str


@tool
def remember(fact: str, runtime: ToolRuntime[User, dict[str, Any]]) -> str:
    """Save a fact about the user for later conversations."""
    assert runtime.store is not None
    namespace = (runtime.context.user_id, "facts")
    key = f"fact-{len(runtime.store.search(namespace, limit=1000)) + 1}"
    runtime.store.put(namespace, key, {"text": fact})
    return f"Saved as {key}."


@tool
def recall(query: str, runtime: ToolRuntime[User, dict[str, Any]]) -> str:
    """Search the facts saved about the user."""
    assert runtime.store is not None
    hits = runtime.store.search((runtime.context.user_id, "facts"), query=query, limit=2)
    return "\n".join(f"- {hit.value['text']}" for hit in hits) or "Nothing saved yet."


def call(name: str, **args: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"{name}-1"}])


def ask(store: EpisodexStore, user: str, question: str, *script: AIMessage) -> list[Any]:
    agent = create_agent(
        ScriptedChatModel(responses=list(script)),
        tools=[remember, recall],
        system_prompt="You are a cooking assistant.",
        context_schema=User,
        store=store,
    )
    result = agent.invoke({"messages": [{"role": "user", "content": question}]}, context=User(user))
    return result["messages"]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        memory = EpisodicMemory(path=folder)
        store = EpisodexStore(memory, agent_id="chef", index={"fields": ["text"]})
        told = [
            ("alice", "I am vegetarian.", "Alice is vegetarian."),
            ("alice", "I cannot stand coriander.", "Alice dislikes coriander."),
            ("bob", "I love steak.", "Bob loves steak."),
        ]
        for user, message, fact in told:
            said = ask(store, user, message, call("remember", fact=fact), AIMessage("Noted."))
            print(f"{user}: {said[-2].text} {said[-1].text}")

        # The recall tool searches Alice's facts only; the model reads what it returned.
        said = ask(
            store,
            "alice",
            "What should I cook tonight?",
            call("recall", query="vegetarian diet"),
            AIMessage("A vegetarian risotto, without coriander."),
        )
        print("recall tool answered:")
        print(said[-2].text)
        print("alice:", said[-1].text)
        print("alice's namespaces:", store.list_namespaces(prefix=("alice",)))
        print("bob's facts:", [item.value["text"] for item in store.search(("bob", "facts"))])
        memory.close()

        # The items outlive the process that wrote them.
        memory = EpisodicMemory(path=folder)
        reopened = EpisodexStore(memory, agent_id="chef", index={"fields": ["text"]})
        [best, *_] = reopened.search(("alice",), query="is she vegetarian?")
        print("after reopening:", best.key, best.value["text"])
        memory.close()


if __name__ == "__main__":
    main()
