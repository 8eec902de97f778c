"""What the memory search tool recalled is recorded as a marker, not as this run's words.

The tool answers the model with a `<recalled_episodes>` block: earlier conversations' texts.
The middleware recorded every message of the run, that reply too, so the earlier words were
stored again as said in this conversation (and recalled as such), multiplying with every
search. The episodex tool's reply is now recorded as `[recalled N episodes]`; the tool stays in
`tools_invoked`, and other tools' results are recorded as before.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory, run_sync
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware, create_memory_search_tool
from langgraph.checkpoint.memory import InMemorySaver
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
    """A model that calls each tool once, in turn, then answers."""

    def answer(messages: list[BaseMessage]) -> BaseMessage:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < len(names):
            args = {"city": "Rome"} if names[done] == "weather" else {"query": "hotel in Rome"}
            return AIMessage("", tool_calls=[{"name": names[done], "args": args, "id": f"c{done}"}])
        return AIMessage("Booked Hotel Artemide for you.")

    return answer


def _this_run(memory: EpisodicMemory, user: str, conversation: str) -> dict[str, Any]:
    [episode] = memory.store.read_recent(
        5, user_id=user, agent_id=AGENT, conversation_id=conversation
    )
    return episode


def _agent(memory: EpisodicMemory) -> Any:
    return create_agent(
        EchoChatModel(answer=_calls("search_memory", "weather")),
        tools=[weather],
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT, search_tool=True)],
        context_schema=EpisodicContext,
    )


def _check(memory: EpisodicMemory, user: str, out: dict[str, Any]) -> None:
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Hotel Artemide" in str(replies[0].content)  # the model saw the recalled episode

    episode = _this_run(memory, user, "now")
    assert EARLIER not in episode["long_summary_text"]
    assert "tool: [recalled 1 episode]" in episode["long_summary_text"]
    # Another tool's result is recorded as it was.
    assert "tool: Sunny in Rome, 24 degrees." in episode["long_summary_text"]
    assert episode["tools_invoked"] == ["search_memory", "weather"]


def test_the_middlewares_search_tool_reply_is_recorded_as_a_marker(
    memory: EpisodicMemory,
) -> None:
    user = _user(memory)
    out = _agent(memory).invoke(
        {"messages": [HumanMessage("Book my usual hotel in Rome.")]},
        context={"user_id": user, "conversation_id": "now"},
    )
    _check(memory, user, out)


async def test_the_middlewares_search_tool_reply_is_recorded_as_a_marker_async(
    memory: EpisodicMemory,
) -> None:
    user = _user(memory)
    out = await _agent(memory).ainvoke(
        {"messages": [HumanMessage("Book my usual hotel in Rome.")]},
        context={"user_id": user, "conversation_id": "now"},
    )
    _check(memory, user, out)


async def test_a_renamed_search_tool_given_to_the_agent_is_recognised_too(
    memory: EpisodicMemory,
) -> None:
    user = _user(memory)
    search = create_memory_search_tool(memory, agent_id=AGENT, name="look_back")
    agent = create_agent(
        EchoChatModel(answer=_calls("look_back")),
        tools=[search],
        middleware=[EpisodicMemoryMiddleware(memory, agent_id=AGENT)],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    await agent.ainvoke(
        {"messages": [HumanMessage("Book my usual hotel in Rome.")]},
        context={"user_id": user},
        config={"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}},
    )
    [episode] = [
        e
        for e in memory.store.read_recent(5, user_id=user, agent_id=AGENT)
        if e["conversation_id"] != "earlier"
    ]
    assert EARLIER not in episode["long_summary_text"]
    assert "tool: [recalled 1 episode]" in episode["long_summary_text"]
    assert episode["tools_invoked"] == ["look_back"]


def test_the_tool_still_answers_with_the_block(memory: EpisodicMemory) -> None:
    user = _user(memory)
    search = create_memory_search_tool(memory, user_id=user, agent_id=AGENT)
    text = search.invoke({"query": "hotel in Rome"})
    assert isinstance(text, str)
    assert text.startswith("<recalled_episodes>")
    assert "Hotel Artemide" in text
