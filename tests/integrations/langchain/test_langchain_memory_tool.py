"""Memory as a tool: the agent searches its own episodes, only ever the run's user's."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware, create_memory_search_tool
from lc_fakes import EchoChatModel

AGENT = "concierge"


def _seed(memory: EpisodicMemory, user: str, short: str) -> None:
    asyncio.run(
        memory.memorize(
            short_summary=short,
            long_summary=f"user: {short}",
            user_id=user,
            agent_id=AGENT,
            conversation_id="earlier",
        )
    )


def _calls_the_tool(query: str, *, sneak_user: str) -> Any:
    """A model that first calls search_memory (trying to name another user), then answers."""

    def answer(messages: list[BaseMessage]) -> BaseMessage:
        if not isinstance(messages[-1], ToolMessage):
            return AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "search_memory",
                        "args": {"query": query, "user_id": sneak_user},
                        "id": f"call-{uuid.uuid4().hex[:8]}",
                    }
                ],
            )
        return AIMessage("Found it.")

    return answer


@pytest.fixture(scope="module")
def users(memory: EpisodicMemory) -> tuple[str, str]:
    tag = uuid.uuid4().hex
    alice, bob = f"alice-{tag}", f"bob-{tag}"
    _seed(memory, alice, "Alice's favourite hotel in Rome is Hotel Artemide.")
    _seed(memory, bob, "Bob's favourite hotel in Rome is Hotel Locarno.")
    return alice, bob


def test_agent_calls_the_tool_and_sees_only_its_users_episodes(
    memory: EpisodicMemory, users: tuple[str, str]
) -> None:
    alice, bob = users
    model = EchoChatModel(answer=_calls_the_tool("favourite hotel in Rome", sneak_user=bob))
    agent = create_agent(
        model,
        tools=[create_memory_search_tool(memory, agent_id=AGENT)],
        context_schema=EpisodicContext,
    )
    out = agent.invoke(
        {"messages": [HumanMessage("Book my usual hotel in Rome.")]},
        context={"user_id": alice},
    )
    assert out["messages"][-1].text == "Found it."
    # The second model call received the tool's answer: Alice's episode, never Bob's.
    tool_message = model.received[1][-1]
    assert isinstance(tool_message, ToolMessage)
    assert "Hotel Artemide" in str(tool_message.content)
    assert "Hotel Locarno" not in str(tool_message.content)
    assert str(tool_message.content).startswith("<recalled_episodes>")
    # Searching writes nothing.
    assert memory.store.count(user_id=alice, agent_id=AGENT) == 1
    assert memory.store.count(user_id=bob, agent_id=AGENT) == 1


async def test_middleware_registers_the_tool_and_records_the_run(
    memory: EpisodicMemory, users: tuple[str, str]
) -> None:
    alice, bob = users
    middleware = EpisodicMemoryMiddleware(memory, agent_id=AGENT, search_tool=True)
    assert [t.name for t in middleware.tools] == ["search_memory"]
    model = EchoChatModel(answer=_calls_the_tool("hotel Rome", sneak_user=alice))
    agent = create_agent(model, middleware=[middleware], context_schema=EpisodicContext)
    out = await agent.ainvoke(
        {"messages": [HumanMessage("Which Rome hotel do I like?")]}, context={"user_id": bob}
    )
    tool_message = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert "Hotel Locarno" in str(tool_message.content)
    assert "Hotel Artemide" not in str(tool_message.content)
    assert model.received[1][-1] == tool_message
    # The recalled block shown to the model is Bob's only, as well.
    assert "Hotel Artemide" not in "\n".join(str(m.text) for m in model.received[0])
    # The run itself is recorded for Bob, with the tool it used.
    (recent,) = await memory.read_recent(1, user_id=bob, agent_id=AGENT, conversation_id=None)
    assert recent["short_summary_text"] == "Which Rome hotel do I like?"
    assert recent["tools_invoked"] == ["search_memory"]
    assert await memory.count(user_id=alice, agent_id=AGENT) == 1


def test_nothing_found_and_bad_arguments(memory: EpisodicMemory) -> None:
    tool = create_memory_search_tool(memory, user_id=f"nobody-{uuid.uuid4().hex}", agent_id=AGENT)
    assert tool.invoke({"query": "anything at all"}) == "No earlier episodes match this search."
    assert tool.invoke({"query": "  "}) == "No earlier episodes match this search."
    assert set(tool.get_input_jsonschema()["properties"]) == {"query"}  # never a user id
    with pytest.raises(ConfigurationError, match="k must be"):
        create_memory_search_tool(memory, k=0)
    with pytest.raises(ConfigurationError, match="memory must be"):
        create_memory_search_tool("./memory")
    with pytest.raises(ConfigurationError, match="unknown recall option"):
        create_memory_search_tool(memory, recall_options={"user_id": "x"})
    with pytest.raises(ConfigurationError, match="search_tool=True is for mode='episodes'"):
        EpisodicMemoryMiddleware(
            mode="lessons", lessons=_NoLessons(), env=lambda s, r: None, search_tool=True
        )


class _NoLessons:
    async def lessons_block(self, current_env: Any, current_state: str) -> str:
        return ""
