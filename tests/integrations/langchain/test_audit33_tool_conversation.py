"""The memory tool names the run's conversation as the middleware does.

`EpisodicMemoryMiddleware(conversation_id=..., search_tool=True)` recorded and recalled the
run under the conversation given to it, but the search tool it registered never got that id:
it took the conversation from the LangGraph `thread_id` (or none). So in the same run the
middleware's block showed an episode as "Earlier in this conversation" and the tool's answer
showed it as "From previous conversations". `create_memory_search_tool` now takes
`conversation_id=` (the id rule's explicit id, winning over the thread id) and the
middleware passes its own.
"""

from __future__ import annotations

import asyncio
import uuid

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicMemoryMiddleware, create_memory_search_tool
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel

AGENT = "concierge"
SAME = "Earlier in this conversation"
PREVIOUS = "From previous conversations"


def _seed(memory: EpisodicMemory, user: str, conversation: str) -> None:
    asyncio.run(
        memory.memorize(
            short_summary="The user asked for Hotel Artemide in Rome.",
            long_summary="user: book Hotel Artemide in Rome",
            user_id=user,
            agent_id=AGENT,
            conversation_id=conversation,
            start_index=0,
            end_index=1,
        )
    )


def _searches_then_answers(messages: list[BaseMessage]) -> BaseMessage:
    if not isinstance(messages[-1], ToolMessage):
        call = {"name": "search_memory", "args": {"query": "hotel in Rome"}, "id": "call-1"}
        return AIMessage("", tool_calls=[call])
    return AIMessage("Booked.")


def _tool_answer(messages: list[BaseMessage]) -> str:
    return next(str(m.content) for m in messages if isinstance(m, ToolMessage))


def test_the_middlewares_tool_shows_its_conversation_as_the_current_one(
    memory: EpisodicMemory,
) -> None:
    user, conversation = f"u-{uuid.uuid4().hex}", f"c-{uuid.uuid4().hex}"
    _seed(memory, user, conversation)
    middleware = EpisodicMemoryMiddleware(
        memory,
        user_id=user,
        agent_id=AGENT,
        conversation_id=conversation,
        search_tool=True,
        record=False,
    )
    agent = create_agent(
        EchoChatModel(answer=_searches_then_answers),
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}
    out = agent.invoke({"messages": [HumanMessage("Which hotel in Rome?")]}, config)
    assert out["messages"][-1].text == "Booked."
    assert SAME in out["recalled_episodes"]
    tool = _tool_answer(out["messages"])
    assert "Hotel Artemide" in tool
    assert SAME in tool and PREVIOUS not in tool


async def test_the_async_run_names_the_same_conversation(memory: EpisodicMemory) -> None:
    user, conversation = f"u-{uuid.uuid4().hex}", f"c-{uuid.uuid4().hex}"
    await asyncio.to_thread(_seed, memory, user, conversation)
    middleware = EpisodicMemoryMiddleware(
        memory,
        user_id=user,
        agent_id=AGENT,
        conversation_id=conversation,
        search_tool=True,
        record=False,
    )
    agent = create_agent(EchoChatModel(answer=_searches_then_answers), middleware=[middleware])
    out = await agent.ainvoke({"messages": [HumanMessage("Which hotel in Rome?")]})
    tool = _tool_answer(out["messages"])
    assert SAME in out["recalled_episodes"]
    assert SAME in tool and PREVIOUS not in tool


def test_a_tool_given_a_conversation_prefers_it_to_the_thread_id(memory: EpisodicMemory) -> None:
    user, conversation = f"u-{uuid.uuid4().hex}", f"c-{uuid.uuid4().hex}"
    _seed(memory, user, conversation)
    tool = create_memory_search_tool(
        memory, user_id=user, agent_id=AGENT, conversation_id=conversation
    )
    config: RunnableConfig = {"configurable": {"thread_id": "another-thread"}}
    answer = str(tool.invoke({"query": "hotel in Rome"}, config))
    assert SAME in answer and PREVIOUS not in answer
    # Without it, the thread is the conversation, as before.
    plain = create_memory_search_tool(memory, user_id=user, agent_id=AGENT)
    assert PREVIOUS in str(plain.invoke({"query": "hotel in Rome"}, config))
