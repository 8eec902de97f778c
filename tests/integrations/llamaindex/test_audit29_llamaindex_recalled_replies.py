"""What the memory search tool recalled is recorded as a marker, not as this session's words.

The episodex tool answers the agent with a `<recalled_episodes>` block: earlier conversations'
texts. `EpisodicMemoryBlock` recorded every message of the session, that reply too (a tool
message for a `FunctionAgent`, an `Observation:` in the reasoning a `ReActAgent` keeps), so
the earlier words were stored again as said in this conversation and recalled as such,
multiplying with every search. The reply is now recorded as `[recalled N episodes]`; the tool
stays in `tools_invoked` and other tools' results are recorded as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import RecordingLLM
from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    create_memory_search_tool,
    offline_tokenizer,
)
from sqlalchemy.ext.asyncio import AsyncEngine

AGENT = "support"
EARLIER = "The kettle of order 1182 arrived cracked; it was refunded."

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
    # LlamaIndex's own ReActAgent asks `ctx.is_running`, which its workflows now deprecate.
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}, 24 degrees."


async def _seed(memory: EpisodicMemory, user: str) -> None:
    await memory.memorize(
        short_summary="Refund for a broken kettle",
        long_summary=EARLIER,
        user_id=user,
        agent_id=AGENT,
        conversation_id="monday",
    )


def _function_calls() -> Any:
    calls = [("look_back", {"query": "kettle refund"}), ("weather", {"city": "Rome"})]

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


def _react_steps() -> Any:
    steps = [
        'Thought: I should look back.\nAction: look_back\nAction Input: {"query": "kettle"}',
        'Thought: And the weather.\nAction: weather\nAction Input: {"city": "Rome"}',
        "Thought: I can answer.\nAnswer: Your kettle was refunded.",
    ]

    def respond(messages: list[ChatMessage], **_: Any) -> ChatMessage:
        return ChatMessage(role="assistant", content=steps.pop(0))

    return respond


@pytest.mark.parametrize("kind", ["function", "react"])
async def test_the_search_tools_reply_is_recorded_as_a_marker(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine, kind: str
) -> None:
    await _seed(memory, user)
    llm = RecordingLLM()
    llm.response_generator = _function_calls() if kind == "function" else _react_steps()
    tools = [
        create_memory_search_tool(memory, user_id=user, agent_id=AGENT, name="look_back"),
        FunctionTool.from_defaults(fn=weather),
    ]
    agent = (
        FunctionAgent(llm=llm, tools=tools)
        if kind == "function"
        else ReActAgent(llm=llm, tools=tools)
    )
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="thursday",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    answer = await agent.run(  # pyright: ignore[reportDeprecated] - LlamaIndex's typing of memory=
        user_msg="Did I get my money back for the kettle?", memory=chat
    )
    assert "refunded" in str(answer)
    assert "order 1182" in "\n".join(str(m.content) for m in llm.calls[-1])  # the agent saw it

    await block.aflush(chat)
    [episode] = await memory.read_recent(
        5, user_id=user, agent_id=AGENT, conversation_id="thursday"
    )
    recorded = episode["long_summary_text"]
    assert "1182" not in recorded
    assert "[recalled 1 episode]" in recorded
    assert "Sunny in Rome, 24 degrees." in recorded  # another tool's result, as before
    if kind == "function":
        assert episode["tools_invoked"] == ["look_back", "weather"]
