"""Earlier episodes a retriever tool shows the model are recorded as a marker, not as this run's.

`create_memory_search_tool`'s reply was recorded as `[recalled N episodes]`, but the same
episodes reached through LangChain's own `create_retriever_tool` over an `EpisodicRetriever`
(or any tool returning its documents) were recorded verbatim: another conversation's words
were stored again as said in this one, then recalled as such. A reply carrying the
retriever's documents as its artifact is now known by them, and `memory_tools=` names the
tools whose replies are recalled memory; other text in such a reply, and other tools'
replies, are recorded as before.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory, run_sync
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, create_retriever_tool, tool
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware, EpisodicRetriever
from lc_fakes import EchoChatModel

AGENT = "concierge"
EARLIER = "The user's favourite hotel in Rome is Hotel Artemide."


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}, 24 degrees."


def _user(memory: EpisodicMemory) -> str:
    user = f"user-{uuid.uuid4().hex}"
    run_sync(
        memory.memorize(
            short_summary=EARLIER,
            long_summary=f"user: {EARLIER}",
            user_id=user,
            agent_id=AGENT,
            conversation_id="earlier",
        )
    )
    return user


def _calls(*names: str) -> Any:
    def answer(messages: list[BaseMessage]) -> BaseMessage:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < len(names):
            args = {"city": "Rome"} if names[done] == "weather" else {"query": "hotel in Rome"}
            return AIMessage("", tool_calls=[{"name": names[done], "args": args, "id": f"c{done}"}])
        return AIMessage("Booked Hotel Artemide for you.")

    return answer


def _run(memory: EpisodicMemory, user: str, notes: BaseTool, **options: Any) -> str:
    agent = create_agent(
        EchoChatModel(answer=_calls("notes", "weather")),
        tools=[notes, weather],
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT, **options)],
        context_schema=EpisodicContext,
    )
    out = agent.invoke(
        {"messages": [HumanMessage("Book my usual hotel in Rome.")]},
        context={"user_id": user, "conversation_id": "now"},
    )
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Hotel Artemide" in str(replies[0].content)  # the model saw the recalled episode
    [episode] = memory.store.read_recent(5, user_id=user, agent_id=AGENT, conversation_id="now")
    assert episode["tools_invoked"] == ["notes", "weather"]
    # Another tool's reply is recorded as it was.
    assert "tool: Sunny in Rome, 24 degrees." in episode["long_summary_text"]
    return str(episode["long_summary_text"])


def _retriever(memory: EpisodicMemory, user: str) -> EpisodicRetriever:
    return EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT, k=3)


def test_a_retriever_tool_with_the_documents_as_artifact_is_known_by_them(
    memory: EpisodicMemory,
) -> None:
    user = _user(memory)
    notes = create_retriever_tool(
        _retriever(memory, user),
        "notes",
        "Search notes about the user.",
        response_format="content_and_artifact",
    )
    recorded = _run(memory, user, notes)
    assert EARLIER not in recorded
    assert "tool: [recalled 1 episode]" in recorded


def test_a_retriever_tool_named_in_memory_tools_is_recorded_as_a_marker(
    memory: EpisodicMemory,
) -> None:
    user = _user(memory)
    notes = create_retriever_tool(_retriever(memory, user), "notes", "Search notes.")
    recorded = _run(memory, user, notes, memory_tools=["notes"])
    assert EARLIER not in recorded
    assert "tool: [recalled episodes]" in recorded


def test_a_reply_mixing_recalled_documents_with_other_text_keeps_the_other_text(
    memory: EpisodicMemory,
) -> None:
    user = _user(memory)
    retriever = _retriever(memory, user)

    @tool(response_format="content_and_artifact")
    def notes(query: str) -> tuple[str, list[Document]]:
        """Order status, and notes about the user."""
        docs = retriever.invoke(query)
        return "Order 42 shipped on Monday.\n\n" + "\n\n".join(d.page_content for d in docs), docs

    recorded = _run(memory, user, notes)
    assert EARLIER not in recorded
    assert "Order 42 shipped on Monday." in recorded
    assert "[recalled 1 episode]" in recorded


def test_a_tool_not_named_keeps_its_reply(memory: EpisodicMemory) -> None:
    user = _user(memory)
    notes = create_retriever_tool(_retriever(memory, user), "notes", "Search notes.")
    recorded = _run(memory, user, notes, memory_tools=["other"])
    # Nothing marks this reply as memory: recorded as it was (the developer names such tools).
    assert f"tool: {EARLIER}" in recorded
