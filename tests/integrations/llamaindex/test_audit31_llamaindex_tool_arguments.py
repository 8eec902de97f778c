"""The LlamaIndex memory tool takes the arguments a model really writes, in a `FunctionAgent`.

A model often adds arguments a search tool does not have (`limit`, `top_k`, a `user_id`) or
leaves the query out. The tool's function took only `query`, so Python refused the call: the
model was shown `create_memory_search_tool.<locals>.search_memory() got an unexpected keyword
argument 'limit'` (an internal name, and no search), where the LangChain tool ignores what is
not its argument. Now an extra argument is ignored (the ids stay the tool's, so another
user's episodes never come back) and a missing query is answered like a blank one.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import RecordingLLM
from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.memory.episodex import create_memory_search_tool

AGENT = "support"

# LlamaIndex's workflow engine walks every attribute of an agent when it builds one, pydantic's
# deprecated ones (`__fields__`, `model_computed_fields` on an instance) included.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


def _calls(arguments: dict[str, Any]) -> Any:
    queue = [arguments]

    def respond(messages: list[ChatMessage], **_: Any) -> ChatMessage:
        if queue:
            call = ToolCallBlock(
                tool_call_id="call-1", tool_name="search_memory", tool_kwargs=queue.pop(0)
            )
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content="Your kettle was refunded.")

    return respond


async def _tool_answer(memory: EpisodicMemory, user: str, arguments: dict[str, Any]) -> str:
    llm = RecordingLLM()
    llm.response_generator = _calls(arguments)
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT)
    agent = FunctionAgent(llm=llm, tools=[tool])
    answer = await agent.run(user_msg="Was my kettle refunded?")  # pyright: ignore[reportDeprecated] - LlamaIndex's typing
    assert str(answer) == "Your kettle was refunded."
    [result] = [m for m in llm.calls[-1] if m.role == MessageRole.TOOL]
    return str(result.content)


@pytest.mark.parametrize(
    "extra",
    [{"limit": 3}, {"top_k": 10, "k": -1}, {"user_id": "{bob}"}, {"query_type": None}],
    ids=["limit", "top_k and k", "another user", "a null"],
)
async def test_extra_arguments_are_ignored_and_the_ids_stay_the_tools(
    memory: EpisodicMemory, user: str, extra: dict[str, Any]
) -> None:
    bob = f"{user}-bob"
    for owner, order in ((user, "1182"), (bob, "9999")):
        await memory.memorize(
            short_summary=f"Refund for broken kettle, order {order}",
            long_summary=f"The kettle of order {order} arrived cracked; it was refunded.",
            user_id=owner,
            agent_id=AGENT,
            conversation_id="monday",
        )
    arguments = {"query": "broken kettle refund"} | {
        key: (value.format(bob=bob) if isinstance(value, str) else value)
        for key, value in extra.items()
    }
    found = await _tool_answer(memory, user, arguments)
    assert found.startswith("<recalled_episodes>")
    assert "order 1182" in found
    assert "9999" not in found and bob not in found


@pytest.mark.parametrize("arguments", [{}, {"q": "kettle"}], ids=["nothing", "another name"])
async def test_a_missing_query_is_answered_like_a_blank_one(
    memory: EpisodicMemory, user: str, arguments: dict[str, Any]
) -> None:
    found = await _tool_answer(memory, user, arguments)
    assert found == "Give a query: a few words about what to look for."


def test_the_schema_the_model_sees_is_only_the_query(memory: EpisodicMemory, user: str) -> None:
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT)
    schema = tool.metadata.get_parameters_dict()
    assert set(schema["properties"]) == {"query"}
    assert schema["required"] == ["query"]
    # The sync twin takes the same arguments.
    assert "Give a query" in str(tool.call(top_k=2).content)
    assert "No remembered episode" in str(tool.call(query="zebra migration", top_k=2).content)
