"""The LlamaIndex memory tool in a real `FunctionAgent`, and the retriever's LlamaIndex manners.

The agent's LLM is a scripted `MockFunctionCallingLLM` that calls the tool; the tests check
what the LLM was sent back and what the store holds.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import RecordingLLM
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.memory import Memory
from llama_index.core.schema import MetadataMode
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    EpisodicRetriever,
    create_memory_search_tool,
    offline_tokenizer,
)
from sqlalchemy.ext.asyncio import AsyncEngine

AGENT = "support"

# LlamaIndex's workflow engine walks every attribute of an agent when it builds one, pydantic's
# deprecated ones (`__fields__`, `model_computed_fields` on an instance) included.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


async def seed(memory: EpisodicMemory, user: str) -> None:
    await memory.memorize_many(
        [
            {
                "short_summary": f"Refund for broken kettle, order {order}",
                "long_summary": f"The kettle of order {order} arrived cracked; it was refunded.",
                "user_id": owner,
                "agent_id": AGENT,
                "conversation_id": "monday",
            }
            for owner, order in ((user, "1182"), (f"{user}-bob", "9999"))
        ]
    )
    await memory.memorize(
        short_summary="Address changed",
        long_summary="Future orders go to 12 Elm Street.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="tuesday",
    )


def calls_tool_then_answers(*tool_calls: dict[str, Any]) -> Any:
    """An LLM script: each tool call in turn (one per LLM call), then a final answer."""
    queue = list(tool_calls)

    def respond(messages: list[ChatMessage], **_: Any) -> ChatMessage:
        if queue:
            kwargs = queue.pop(0)
            return ChatMessage(
                role="assistant",
                blocks=[
                    ToolCallBlock(
                        tool_call_id=f"call-{len(queue)}",
                        tool_name="search_memory",
                        tool_kwargs=kwargs,
                    )
                ],
            )
        return ChatMessage(role="assistant", content="Your kettle was refunded on Monday.")

    return respond


async def test_function_agent_searches_its_own_episodes_only(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    await seed(memory, user)
    llm = RecordingLLM()
    # The model asks twice: once plainly, once trying to name another user.
    llm.response_generator = calls_tool_then_answers(
        {"query": "broken kettle refund"},
        {"query": "broken kettle refund", "user_id": f"{user}-bob"},
    )
    tool = create_memory_search_tool(memory, user_id=user, agent_id=AGENT)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="thursday",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    agent = FunctionAgent(llm=llm, tools=[tool], system_prompt="You are a support agent.")
    answer = await agent.run(  # pyright: ignore[reportDeprecated] - LlamaIndex's typing of memory=
        user_msg="Did I get my money back for the kettle?", memory=chat
    )
    assert str(answer) == "Your kettle was refunded on Monday."

    tool_results = [m for m in llm.calls[-1] if m.role == MessageRole.TOOL]
    assert len(tool_results) == 2
    found = str(tool_results[0].content)
    assert "Refund for broken kettle, order 1182" in found
    assert found.startswith("<recalled_episodes>")
    # Whatever the model sends, the ids are the tool's: Bob's episode never reaches it.
    assert "9999" not in llm.last_input()
    assert "9999" not in str(tool_results[1].content)

    # The store: the exchange (with the tool calls) is recorded once, for this user only.
    await block.aflush(chat)
    assert await memory.count(user_id=user, agent_id=AGENT, conversation_id="thursday") == 1
    [episode] = await memory.read_recent(
        1, user_id=user, agent_id=AGENT, conversation_id="thursday"
    )
    assert episode["tools_invoked"] == ["search_memory"]
    assert await memory.count(user_id=f"{user}-bob", agent_id=AGENT) == 1


async def test_tool_answers_without_memory_when_nothing_matches_or_the_store_fails(
    tmp_path: Any, user: str
) -> None:
    own = EpisodicMemory(path=tmp_path / "store")
    tool = create_memory_search_tool(own, user_id=user, agent_id=AGENT, conversation_id="c1")
    assert "No remembered episode" in str(await tool.acall(query="anything at all"))
    assert "Give a query" in str(await tool.acall(query="  "))
    own.close()  # a closed store fails every call: the tool still answers
    assert "could not be searched" in str(await tool.acall(query="kettle"))


async def test_tool_and_retriever_take_the_sync_twin(memory: EpisodicMemory, user: str) -> None:
    await seed(memory, user)
    twin = SyncEpisodicMemory(memory=memory)
    try:
        tool = create_memory_search_tool(twin, user_id=user, agent_id=AGENT, name="recall")
        assert tool.metadata.name == "recall"
        assert "order 1182" in str(tool.call(query="kettle refund"))  # the sync path too
        retriever = EpisodicRetriever(twin, user_id=user, agent_id=AGENT)
        nodes = await retriever.aretrieve("kettle refund")
        assert nodes[0].node.metadata["conversation_id"] == "monday"
        block = EpisodicMemoryBlock(memory=twin, user_id=user, agent_id=AGENT)
        assert block.memory is memory
    finally:
        twin.close()
    with pytest.raises(ConfigurationError, match="memory must be"):
        create_memory_search_tool("./memory", user_id=user, agent_id=AGENT)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="user_id"):
        create_memory_search_tool(memory, user_id=" ", agent_id=AGENT)


async def test_similarity_top_k_caps_the_nodes(memory: EpisodicMemory, user: str) -> None:
    await seed(memory, user)
    query = "refund for the broken kettle"
    assert len(await EpisodicRetriever(memory, user_id=user, agent_id=AGENT).aretrieve(query)) == 2
    top1 = EpisodicRetriever(memory, user_id=user, agent_id=AGENT, similarity_top_k=1)
    nodes = await top1.aretrieve(query)
    assert [n.node.metadata["short_summary"] for n in nodes] == [
        "Refund for broken kettle, order 1182"
    ]
    # Both sections together stay within the cap; the best are kept.
    both = EpisodicRetriever(
        memory, user_id=user, agent_id=AGENT, conversation_id="monday", similarity_top_k=1
    )
    assert len(both.retrieve(query)) == 1
    with pytest.raises(ConfigurationError, match="similarity_top_k"):
        EpisodicRetriever(memory, user_id=user, agent_id=AGENT, similarity_top_k=0)


async def test_node_text_for_the_llm_has_no_empty_fields(memory: EpisodicMemory, user: str) -> None:
    await seed(memory, user)  # no flows, tools, sentiment or metadata were given
    [node, *_] = await EpisodicRetriever(memory, user_id=user, agent_id=AGENT).aretrieve(
        "kettle refund"
    )
    shown = node.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "Refund for broken kettle, order 1182" in shown
    assert "conversation_id: monday" in shown
    for noise in ("[]", "None", "{}", "flows_activated", "average_user_sentiment"):
        assert noise not in shown, noise
    assert "flows_activated" not in node.node.metadata
