"""EpisodicMemoryBlock inside real LlamaIndex `Memory` and `FunctionAgent` runs."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, ValidationError, token_counter
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.memory import InsertMethod, Memory
from llama_index.core.storage.chat_store.sql import MessageStatus  # pyright: ignore[reportPrivateImportUsage]
from llama_index.core.tools import FunctionTool
from llama_index.memory.episodex import (
    SUMMARY_PROMPT,
    EpisodicMemoryBlock,
    from_llama_index,
    offline_tokenizer,
)
from sqlalchemy.ext.asyncio import AsyncEngine

# LlamaIndex's workflow engine walks every attribute of an agent when it builds one, pydantic's
# deprecated ones (`__fields__`, `model_computed_fields` on an instance) included.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
QUESTION = "Did I ever get my refund for order 1234?"


def chat_memory(
    block: EpisodicMemoryBlock, session_id: str, engine: AsyncEngine, **options: Any
) -> Memory:
    """A LlamaIndex `Memory` with the block and the offline tokenizer (nothing downloads)."""
    return Memory.from_defaults(
        session_id=session_id,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=engine,
        **options,
    )


def small_chat_memory(block: EpisodicMemoryBlock, session_id: str, engine: AsyncEngine) -> Memory:
    """Short-term memory of about 40 tokens: older turns flush into the block quickly."""
    return chat_memory(
        block,
        session_id,
        engine,
        token_limit=4000,
        chat_history_token_ratio=0.01,
        token_flush_size=10,
    )


def episode_ids(block_text: str) -> list[str]:
    return re.findall(r'<episode id="([^"]+)"', block_text)


async def seed(memory: EpisodicMemory, user: str) -> None:
    episodes = [
        (
            "Refund for broken order 1234",
            "Order 1234 arrived broken; the agent refunded 59 EUR in full.",
        ),
        ("Favourite colour is teal", "The user said their favourite colour is teal."),
        ("Shipping address changed", "The user moved; the new shipping address is 12 Elm Street."),
        ("Newsletter unsubscribed", "The user asked to stop the weekly newsletter; done."),
        ("Password reset", "The user could not log in; the agent sent a password reset link."),
    ]
    await memory.memorize_many(
        [
            {
                "short_summary": s,
                "long_summary": long,
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": f"old-{i}",
            }
            for i, (s, long) in enumerate(episodes)
        ]
    )


@pytest.mark.parametrize("insert_method", [InsertMethod.SYSTEM, InsertMethod.USER])
async def test_function_agent_receives_the_episodes_block(
    memory: EpisodicMemory,
    user: str,
    make_llm: Any,
    insert_method: InsertMethod,
    chat_engine: AsyncEngine,
) -> None:
    await seed(memory, user)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[], system_prompt="You are a support agent.")

    response = await agent.run(  # pyright: ignore[reportDeprecated]
        QUESTION, memory=chat_memory(block, "today", chat_engine, insert_method=insert_method)
    )

    assert str(response) == "Noted."
    sent: list[ChatMessage] = llm.calls[-1]
    if insert_method is InsertMethod.SYSTEM:
        carriers = [
            m for m in sent if m.role == MessageRole.SYSTEM and "<memory>" in (m.content or "")
        ]
        assert len(carriers) == 1
        assert sent[-1].role == MessageRole.USER and sent[-1].content == QUESTION
    else:
        carriers = [sent[-1]]
        assert sent[-1].role == MessageRole.USER
        assert (sent[-1].content or "").rstrip().endswith(QUESTION)
        assert not any(
            "<memory>" in (m.content or "") for m in sent if m.role == MessageRole.SYSTEM
        )
    text = carriers[0].content or ""
    assert re.search(r"<memory>\s*<episodes>\s*<recalled_episodes>", text)
    assert '<previous_conversations title="From previous conversations">' in text
    assert "<same_conversation" not in text  # nothing recorded in "today" yet
    # The best match comes first and all five earlier conversations are labelled.
    first = text.index("<episode ")
    assert text.index("Refund for broken order 1234") > first
    assert text.index("Refund for broken order 1234") < text.index("Password reset")
    assert 'conversation="old-0"' in text
    assert len(episode_ids(text)) == 5


async def test_flushed_messages_are_recorded_then_recalled_in_a_later_session(
    memory: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[])
    monday = small_chat_memory(block, "monday", chat_engine)

    llm.reply = "I have issued a refund of 59 EUR for order 1234."
    await agent.run("My order 1234 arrived broken, I want my money back.", memory=monday)  # pyright: ignore[reportDeprecated]
    # Recorded as soon as the exchange is complete, whatever the short-term buffer holds.
    assert await memory.count(user_id=user, agent_id=AGENT) == 1
    llm.reply = "Noted, I will ship to 12 Elm Street from now on."
    await agent.run("Please update my shipping address to 12 Elm Street.", memory=monday)  # pyright: ignore[reportDeprecated]

    archived = await monday.aget_all(status=MessageStatus.ARCHIVED)
    assert [m.role for m in archived[:2]] == [MessageRole.USER, MessageRole.ASSISTANT]
    assert await memory.count(user_id=user, agent_id=AGENT, conversation_id="monday") >= 1
    [episode, *_] = await memory.read_recent(
        10, user_id=user, agent_id=AGENT, conversation_id="monday"
    )
    oldest = (await memory.read_recent(10, user_id=user, agent_id=AGENT))[-1]
    assert oldest["short_summary_text"] == "My order 1234 arrived broken, I want my money back."
    assert oldest["long_summary_text"] == (
        "user: My order 1234 arrived broken, I want my money back.\n"
        "assistant: I have issued a refund of 59 EUR for order 1234."
    )
    assert oldest["metadata"]["source"] == "llama_index"
    assert episode["conversation_id"] == "monday"

    # Later in the same session the episode is labelled as this conversation's.
    llm.reply = "Noted."
    await agent.run("How much was the refund again?", memory=monday)  # pyright: ignore[reportDeprecated]
    same = llm.last_input()
    assert '<same_conversation title="Earlier in this conversation">' in same
    assert "refund of 59 EUR" in same

    # A new session recalls it as a previous conversation.
    await agent.run(  # pyright: ignore[reportDeprecated]
        "How much was my refund for order 1234?", memory=chat_memory(block, "tuesday", chat_engine)
    )
    later = llm.last_input()
    assert '<previous_conversations title="From previous conversations">' in later
    assert 'conversation="monday"' in later
    assert "refund of 59 EUR for order 1234" in later


async def test_tools_called_in_flushed_turns_are_recorded(
    memory: EpisodicMemory, user: str, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    def lookup_order(order_id: str = "1234") -> str:
        """Look up an order's status."""
        return f"Order {order_id}: delivered on May 2."

    def scripted(messages: list[ChatMessage], **_: Any) -> ChatMessage:
        if messages[-1].role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content="Your order was delivered on May 2.")
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(
                    tool_call_id="call-1",
                    tool_name="lookup_order",
                    tool_kwargs={"order_id": "1234"},
                )
            ],
        )

    llm = make_llm()
    llm.response_generator = scripted
    agent = FunctionAgent(llm=llm, tools=[FunctionTool.from_defaults(lookup_order)])
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = small_chat_memory(block, "orders", chat_engine)
    await agent.run("Where is my order 1234?", memory=chat)  # pyright: ignore[reportDeprecated]
    await agent.run("And when will the next one arrive?", memory=chat)  # pyright: ignore[reportDeprecated]

    episodes = await memory.read_recent(5, user_id=user, agent_id=AGENT, conversation_id="orders")
    # One episode per exchange, each whole: the question, the tool call, its result, the answer.
    assert sorted((e["start_index"], e["end_index"]) for e in episodes) == [(0, 3), (4, 7)]
    episode = min(episodes, key=lambda e: e["start_index"])
    assert episode["long_summary_text"].startswith("user: Where is my order 1234?\n")
    assert episode["tools_invoked"] == ["lookup_order"]
    assert "[called lookup_order]" in episode["long_summary_text"]
    assert "tool: Order 1234: delivered on May 2." in episode["long_summary_text"]


async def test_truncation_drops_the_lowest_ranked_episodes_first(
    memory: EpisodicMemory, user: str
) -> None:
    await seed(memory, user)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    count = token_counter()
    full = await block.aget([ChatMessage(role="user", content=QUESTION)], session_id="now")
    ranked = episode_ids(full)
    assert len(ranked) == 5

    shorter = await block.atruncate(full, count(full) // 2)
    assert shorter is not None
    assert count(shorter) <= count(full) - count(full) // 2
    kept = episode_ids(shorter)
    assert 1 <= len(kept) < 5
    assert kept == ranked[: len(kept)]  # the best ones stay, in rank order
    assert "Refund for broken order 1234" in shorter

    assert await block.atruncate(full, count(full)) is None
    assert await block.atruncate("a block this memory did not render", 1) is None


async def test_memory_over_its_token_limit_keeps_the_best_episodes(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    await seed(memory, user)
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    tokenizer = offline_tokenizer()
    full = await block.aget([ChatMessage(role="user", content=QUESTION)], session_id="tight")
    budget = len(tokenizer(QUESTION)) + len(tokenizer(full)) // 2

    chat = chat_memory(block, "tight", chat_engine, token_limit=budget)
    await chat.aput(ChatMessage(role="user", content=QUESTION))
    [system, question] = await chat.aget()

    assert question.content == QUESTION
    text = system.content or ""
    kept = episode_ids(text)
    assert 1 <= len(kept) < 5
    assert kept == episode_ids(full)[: len(kept)]
    assert "Refund for broken order 1234" in text


async def test_two_users_are_isolated(
    memory: EpisodicMemory, make_llm: Any, chat_engine: AsyncEngine
) -> None:
    alice = EpisodicMemoryBlock(memory=memory, user_id="alice-iso", agent_id=AGENT)
    bob = EpisodicMemoryBlock(memory=memory, user_id="bob-iso", agent_id=AGENT)
    other_agent = EpisodicMemoryBlock(memory=memory, user_id="alice-iso", agent_id="sales")
    await alice.aput(
        [
            ChatMessage(role="user", content="My locker code is 4417."),
            ChatMessage(role="assistant", content="Saved."),
        ],
        session_id="alice-1",
    )
    await bob.aput(
        [
            ChatMessage(role="user", content="I play chess on Sundays."),
            ChatMessage(role="assistant", content="Nice."),
        ],
        session_id="bob-1",
    )
    llm = make_llm()
    agent = FunctionAgent(llm=llm, tools=[])

    await agent.run("What is my locker code?", memory=chat_memory(bob, "bob-2", chat_engine))  # pyright: ignore[reportDeprecated]
    seen_by_bob = llm.last_input()
    assert "<recalled_episodes>" in seen_by_bob and "chess" in seen_by_bob
    assert "4417" not in seen_by_bob

    await agent.run("What is my locker code?", memory=chat_memory(alice, "alice-2", chat_engine))  # pyright: ignore[reportDeprecated]
    assert "4417" in llm.last_input() and "chess" not in llm.last_input()

    await agent.run(  # pyright: ignore[reportDeprecated]
        "What is my locker code?", memory=chat_memory(other_agent, "alice-3", chat_engine)
    )
    assert "<memory>" not in llm.last_input()  # same user, another agent: nothing


async def test_the_summariser_writes_the_short_summary(
    memory: EpisodicMemory, user: str, make_llm: Any
) -> None:
    summariser_llm = make_llm(reply="  The user wanted a refund for order 1234 and got it.  ")
    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id=AGENT, summarizer=from_llama_index(summariser_llm)
    )
    await block.aput(
        [
            ChatMessage(role="user", content="Refund order 1234 please."),
            ChatMessage(role="assistant", content="Done."),
        ],
        session_id="s1",
    )
    [episode] = await memory.read_recent(1, user_id=user, agent_id=AGENT)
    assert episode["short_summary_text"] == "The user wanted a refund for order 1234 and got it."
    assert episode["long_summary_text"] == "user: Refund order 1234 please.\nassistant: Done."
    prompt = summariser_llm.calls[-1][-1].content
    assert prompt == SUMMARY_PROMPT.format(exchange=episode["long_summary_text"])


async def test_a_failing_summariser_still_records_the_episode(
    memory: EpisodicMemory, user: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(prompt: str) -> str:
        raise RuntimeError("model unavailable")

    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, summarizer=broken)
    with caplog.at_level(logging.WARNING):
        await block.aput(
            [ChatMessage(role="user", content="Cancel my newsletter.")], session_id="s1"
        )
    [episode] = await memory.read_recent(1, user_id=user, agent_id=AGENT)
    assert episode["short_summary_text"] == "Cancel my newsletter."
    assert "summarizer failed" in caplog.text


async def test_a_fixed_conversation_id_overrides_the_session(
    memory: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="ticket-9"
    )
    await block.aput(
        [ChatMessage(role="user", content="The printer is jammed.")], session_id="random-session"
    )
    assert await memory.count(user_id=user, agent_id=AGENT, conversation_id="ticket-9") == 1
    text = await block.aget(
        [ChatMessage(role="user", content="printer jammed")], session_id="other"
    )
    assert '<same_conversation title="Earlier in this conversation">' in text


async def test_recall_options_reach_the_core(memory: EpisodicMemory, user: str) -> None:
    await seed(memory, user)
    keyword_only = EpisodicMemoryBlock(
        memory=memory,
        user_id=user,
        agent_id=AGENT,
        previous_conversation_limit=1,
        recall_options={"short_weight": 0.0, "long_weight": 0.0, "bm25_weight": 1.0},
    )
    text = await keyword_only.aget([ChatMessage(role="user", content="Elm Street")], session_id="s")
    assert len(episode_ids(text)) == 1 and "12 Elm Street" in text


async def test_nothing_to_say_gives_no_block(memory: EpisodicMemory, user: str) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    assert await block.aget(None) == ""
    assert await block.aget([ChatMessage(role="assistant", content="Hello!")]) == ""
    assert (
        await block.aget([ChatMessage(role="user", content="anything at all")], session_id="s")
        == ""
    )
    await block.aput([ChatMessage(role="system", content="Be brief.")], session_id="s")
    assert await memory.count(user_id=user, agent_id=AGENT) == 0


async def test_messages_without_a_conversation_are_refused(
    memory: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    with pytest.raises(ValidationError, match="which conversation"):
        await block.aput([ChatMessage(role="user", content="hello")])
    assert await memory.count(user_id=user, agent_id=AGENT) == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"user_id": "  "}, "user_id: must be a non-empty string"),
        ({"agent_id": ""}, "agent_id: must be a non-empty string"),
        ({"conversation_id": ""}, "conversation_id: must be a non-empty string"),
        ({"memory": "./memory"}, "memory:"),
        ({"max_tokens": 0}, "max_tokens:"),
        ({"previous_conversation_limit": -1}, "previous_conversation_limit:"),
        ({"recall_options": {"user_id": "someone-else"}}, "unknown recall option"),
    ],
)
def test_bad_settings_raise_configuration_error(
    memory: EpisodicMemory, options: dict[str, Any], message: str
) -> None:
    settings: dict[str, Any] = {"memory": memory, "user_id": "u", "agent_id": "a", **options}
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        EpisodicMemoryBlock(**settings)


def test_missing_ids_are_named(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match="user_id is required"):
        EpisodicMemoryBlock(memory=memory, agent_id="a")


async def test_a_memory_over_its_limit_with_nothing_recalled_still_reads(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    # Memory asks every truncatable block to shrink, even one that returned nothing ([]).
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = chat_memory(block, "long", chat_engine, token_limit=20)
    question = "Tell me everything you know about order 1234, its refund, its shipping and more."
    await chat.aput(ChatMessage(role="user", content=question))
    assert [m.content for m in await chat.aget()] == [question]


async def test_recall_options_are_the_core_recall_options(
    memory: EpisodicMemory, user: str
) -> None:
    # Every episodex.RecallOptions name is accepted, as in the LangChain adapter (issue 13).
    await seed(memory, user)
    block = EpisodicMemoryBlock(
        memory=memory,
        user_id=user,
        agent_id=AGENT,
        recall_options={"with_stream_ranks": False, "stage1_limit": 50, "rrf_k": 5},
    )
    text = await block.aget([ChatMessage(role="user", content="Elm Street")], session_id="s")
    assert "12 Elm Street" in text
    # A limit in recall_options wins over the block's own setting.
    silent = EpisodicMemoryBlock(
        memory=memory,
        user_id=user,
        agent_id=AGENT,
        recall_options={"previous_conversation_limit": 0},
    )
    assert await silent.aget([ChatMessage(role="user", content="Elm Street")], session_id="s") == ""
    with pytest.raises(ConfigurationError, match="unknown recall option"):
        EpisodicMemoryBlock(
            memory=memory,
            user_id=user,
            agent_id=AGENT,
            recall_options={"top_k": 2},
        )
