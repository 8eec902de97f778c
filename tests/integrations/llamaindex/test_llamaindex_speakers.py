"""`EpisodicMemoryBlock` stores who spoke: roles, and `additional_kwargs["name"]`, never a tool's.

LlamaIndex's OpenAI-style LLMs send a message's `additional_kwargs` as its fields, so a
`name` there is the participant's name (on a tool or function message, the tool's). The
block stores each episode's speakers, so a recall naming a speaker uses the `speaker` streams.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

# LlamaIndex's workflow engine walks every attribute of an agent when it builds one, pydantic's
# deprecated ones (`__fields__`, `model_computed_fields` on an instance) included.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "companion"


@pytest.fixture
def episodes() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _said(role: str, text: str, **kwargs: Any) -> ChatMessage:
    return ChatMessage(role=role, content=text, additional_kwargs=kwargs)


async def _speakers(memory: EpisodicMemory, user: str) -> list[list[str]]:
    found = await memory.read_recent(10, user_id=user, agent_id=AGENT)
    return [item["speakers"] for item in sorted(found, key=lambda i: i["conversation_id"])]


async def test_an_agent_run_through_memory_stores_the_users_name(
    episodes: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=episodes, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="s1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    agent = FunctionAgent(llm=make_llm(), tools=[])
    question = _said("user", "I went to a pottery class on Saturday.", name="Caroline")
    response = await agent.run(user_msg=question, memory=chat)  # pyright: ignore[reportDeprecated]
    assert str(response) == "Noted."
    stats = await block.aflush(chat)
    assert stats.recorded == 1
    assert await _speakers(episodes, user) == [["user", "Caroline", "assistant"]]

    res = await episodes.recall(
        user_id=user, agent_id=AGENT, query="what did Caroline say about pottery"
    )
    (item,) = res["previous_conversations"]
    assert "speaker" in item["streams"]


async def test_tool_and_function_names_are_not_speakers(
    episodes: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=episodes, user_id=user, agent_id=AGENT)
    await block.aput(
        [
            _said("user", "Where is my order 1234?", name="Caroline"),
            _said("assistant", "Let me look.", name="Mel"),
            _said("tool", "Order 1234 shipped.", name="lookup_order", tool_call_id="call-1"),
            _said("function", "Delivered Monday.", name="track_parcel"),
            _said("assistant", "It shipped and arrives Monday.", name="Mel"),
        ],
        session_id="c1",
    )
    await block.recorder.flush()
    assert await _speakers(episodes, user) == [
        ["user", "Caroline", "assistant", "Mel", "tool", "function"]
    ]


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        ("Caroline\nSmith", ["user", "Caroline Smith", "assistant"]),
        (" \n ", ["user", "assistant"]),
        ("", ["user", "assistant"]),
        ("x" * 600, ["user", "assistant"]),
        (42, ["user", "assistant"]),  # not a string: no name
    ],
)
async def test_an_odd_name_is_collapsed_or_left_out_and_the_turn_still_recorded(
    episodes: EpisodicMemory, user: str, name: Any, stored: list[str]
) -> None:
    block = EpisodicMemoryBlock(memory=episodes, user_id=user, agent_id=AGENT)
    await block.aput(
        [_said("user", "I adopted a cat.", name=name), _said("assistant", "Congratulations!")],
        session_id="c1",
    )
    await block.recorder.flush()
    assert await _speakers(episodes, user) == [stored]


async def test_messages_without_names_store_their_roles(
    episodes: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=episodes, user_id=user, agent_id=AGENT)
    await block.aput(
        [_said("system", "Be brief."), _said("user", "hello"), _said("assistant", "hi")],
        session_id="c1",
    )
    await block.recorder.flush()
    assert await _speakers(episodes, user) == [["user", "assistant"]]
