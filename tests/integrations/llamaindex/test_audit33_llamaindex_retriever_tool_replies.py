"""Earlier episodes a retriever tool shows the agent are recorded as a marker, not as this session's.

`create_memory_search_tool`'s reply was recorded as `[recalled N episodes]`, but the same
episodes reached through LlamaIndex's own `RetrieverTool` over an `EpisodicRetriever` were
recorded verbatim: another conversation's words were stored again as said in this one, then
recalled as such. `memory_tools=` now names the tools whose replies are recalled memory, and
a `<recalled_episodes>` block inside any tool's reply becomes the marker with the rest of the
reply kept; other tools' replies are recorded as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import RecordingLLM
from episodex import EpisodicMemory, format_recall
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.memory import Memory
from llama_index.core.tools import BaseTool, FunctionTool, RetrieverTool
from llama_index.memory.episodex import EpisodicMemoryBlock, EpisodicRetriever, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

AGENT = "support"
EARLIER = "The kettle of order 1182 arrived cracked; it was refunded."

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}, 24 degrees."


def _calls() -> Any:
    calls = [("notes", {"input": "kettle refund"}), ("weather", {"city": "Rome"})]

    def respond(messages: list[ChatMessage], **_: Any) -> ChatMessage:
        if calls:
            name, kwargs = calls.pop(0)
            return ChatMessage(
                role="assistant",
                blocks=[
                    ToolCallBlock(tool_call_id=f"c{len(calls)}", tool_name=name, tool_kwargs=kwargs)
                ],
            )
        return ChatMessage(role="assistant", content="Your kettle was refunded.")

    return respond


async def _recorded(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine, notes: BaseTool, **options: Any
) -> str:
    await memory.memorize(
        short_summary="Refund for a broken kettle",
        long_summary=EARLIER,
        user_id=user,
        agent_id=AGENT,
        conversation_id="monday",
    )
    llm = RecordingLLM()
    llm.response_generator = _calls()
    agent = FunctionAgent(llm=llm, tools=[notes, FunctionTool.from_defaults(fn=weather)])
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, **options)
    chat = Memory.from_defaults(
        session_id="thursday",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    await agent.run(  # pyright: ignore[reportDeprecated] - LlamaIndex's typing of memory=
        user_msg="Did I get my money back for the kettle?", memory=chat
    )
    assert "order 1182" in "\n".join(str(m.content) for m in llm.calls[-1])  # the agent saw it
    await block.aflush(chat)
    [episode] = await memory.read_recent(
        5, user_id=user, agent_id=AGENT, conversation_id="thursday"
    )
    recorded = str(episode["long_summary_text"])
    assert "Sunny in Rome, 24 degrees." in recorded  # another tool's reply, as before
    assert episode["tools_invoked"] == ["notes", "weather"]
    return recorded


async def test_a_retriever_tool_named_in_memory_tools_is_recorded_as_a_marker(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT)
    notes = RetrieverTool.from_defaults(retriever, name="notes", description="Notes on the user.")
    recorded = await _recorded(memory, user, chat_engine, notes, memory_tools=["notes"])
    assert "1182" not in recorded
    assert "[recalled episodes]" in recorded


async def test_a_recall_block_inside_a_tools_reply_keeps_the_rest_of_the_reply(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    async def notes(input: str) -> str:
        """Order status, and notes on the user."""
        found = await memory.recall(user_id=user, agent_id=AGENT, query=input)
        return f"Order 42 shipped on Monday.\n{format_recall(found)}"

    tool = FunctionTool.from_defaults(async_fn=notes, name="notes")
    recorded = await _recorded(memory, user, chat_engine, tool)
    assert "1182" not in recorded
    assert "tool: Order 42 shipped on Monday.\n  [recalled 1 episode]" in recorded


async def test_a_retriever_tool_not_named_keeps_its_reply(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    retriever = EpisodicRetriever(memory=memory, user_id=user, agent_id=AGENT)
    notes = RetrieverTool.from_defaults(retriever, name="notes", description="Notes on the user.")
    recorded = await _recorded(memory, user, chat_engine, notes)
    # Nothing marks this reply as memory: recorded as it was (the developer names such tools).
    assert EARLIER in recorded
