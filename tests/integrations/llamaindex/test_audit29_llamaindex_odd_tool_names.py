"""A tool call with a name the store refuses never costs the exchange its episode.

The tools an exchange called are stored with its episode (`tools_invoked`), and their names
come from the model's output: a hallucinated name longer than an id may be (512 characters)
or a blank one made the store reject the whole episode, which is never retried, so the turn
was lost (only counted as `rejected`). Such names are now left out of `tools_invoked`; the
episode is stored with the others.
"""

from __future__ import annotations

from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine


def _call(call_id: str, name: str) -> ToolCallBlock:
    return ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs={})


async def test_an_odd_tool_name_is_left_out_not_the_episode(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id="support")
    chat = Memory.from_defaults(
        session_id="weather-1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    await chat.aput_messages(
        [
            ChatMessage(role="user", content="What is the weather in Lisbon?"),
            ChatMessage(
                role="assistant",
                blocks=[_call("1", "w" * 600), _call("2", "   "), _call("3", "get_weather")],
            ),
            ChatMessage(role="tool", content="sunny", additional_kwargs={"tool_call_id": "3"}),
            ChatMessage(role="assistant", content="It is sunny in Lisbon."),
        ]
    )

    stats = await block.aflush(chat)

    assert (stats.recorded, stats.rejected, stats.pending) == (1, 0, 0)
    [episode] = (await memory.recall(user_id=user, agent_id="support", query="weather Lisbon"))[
        "previous_conversations"
    ]
    assert episode["tools_invoked"] == ["get_weather"]
