"""`EpisodicMemoryBlock` given a session id or argument of the wrong kind: a typed error.

`aget(session_id=["c1"])` (or a dict) raised a raw `TypeError: unhashable`; a session id the
store refuses (a number, a blank or over-long string) had the session's turns counted as
recorded and their episodes refused by the store, so they were lost while the call went on
(as did `aflush` for a `Memory` with such a session id); `aput` raised `ConfigurationError`
for an over-long one after stamping it on the caller's messages; `aget(messages="hi")` and
`atruncate(block, "many")` raised raw `AttributeError`/`ValueError`, and so did
`LessonsMemoryBlock.aget(messages="hi")` (a `current_state` that is no string was logged as a
failing lesson memory). Now each raises `ValidationError` before anything is counted, stamped
or recorded, and a later valid call records every turn.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory, ValidationError
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, LessonsMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

AGENT = "support"

BAD_SESSIONS: list[Any] = [["c1"], {"c": 1}, ("c1",), 5, b"c1", "", "   ", "c" * 600]


def _exchange(n: int = 0) -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content=f"My order {1234 + n} arrived broken, please refund it"),
        ChatMessage(role="assistant", content="I have issued the refund."),
    ]


def _unchanged(block: EpisodicMemoryBlock) -> None:
    stats = block.stats()
    assert (stats.recorded, stats.pending, stats.rejected, stats.recall_failures) == (0, 0, 0, 0)


@pytest.mark.parametrize("session_id", BAD_SESSIONS, ids=repr)
async def test_aget_refuses_a_bad_session_id_and_loses_no_turn(
    memory: EpisodicMemory, user: str, session_id: Any
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    history = [*_exchange(), ChatMessage(role="user", content="Did the refund go through?")]
    with pytest.raises(ValidationError, match=r"session_id|conversation_id"):
        await block.aget(history, session_id=session_id)
    _unchanged(block)
    assert await memory.count(user_id=user, agent_id=AGENT) == 0
    # The same history under a good session id: its exchange is recorded, not skipped.
    await block.aget(history, session_id="c1")
    assert block.stats().recorded == 1
    assert await memory.count(user_id=user, agent_id=AGENT, conversation_id="c1") == 1


@pytest.mark.parametrize("session_id", [["c1"], {"c": 1}, 5], ids=repr)
async def test_a_session_id_of_the_wrong_kind_is_refused_with_a_conversation_id_set(
    memory: EpisodicMemory, user: str, session_id: Any
) -> None:
    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="fixed"
    )
    with pytest.raises(ValidationError, match="session_id"):
        await block.aget(_exchange(), session_id=session_id)
    with pytest.raises(ValidationError, match="session_id"):
        await block.aput(_exchange(), session_id=session_id)
    _unchanged(block)


@pytest.mark.parametrize("session_id", BAD_SESSIONS, ids=repr)
async def test_aput_refuses_a_bad_session_id_before_stamping_it(
    memory: EpisodicMemory, user: str, session_id: Any
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    for from_short_term_memory in (False, True):
        messages = _exchange()
        with pytest.raises(ValidationError):
            await block.aput(
                messages, from_short_term_memory=from_short_term_memory, session_id=session_id
            )
        assert all("session_id" not in m.additional_kwargs for m in messages)
    _unchanged(block)
    assert await memory.count(user_id=user, agent_id=AGENT) == 0


async def test_messages_stamped_with_an_over_long_session_id_are_refused_as_bad_input(
    memory: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    messages = _exchange()
    for message in messages:
        message.additional_kwargs["session_id"] = "c" * 600
    with pytest.raises(ValidationError, match="conversation_id"):
        await block.aput(messages, from_short_term_memory=True)
    _unchanged(block)


async def test_a_memory_with_a_session_id_the_store_refuses_fails_loudly(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    chat = Memory.from_defaults(
        session_id="s" * 600,
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    await chat.aput_messages(_exchange())
    with pytest.raises(ValidationError, match="conversation_id"):
        await block.aflush(chat)
    with pytest.raises(ValidationError, match="conversation_id"):
        await chat.aget()
    _unchanged(block)
    assert await memory.count(user_id=user, agent_id=AGENT) == 0


@pytest.mark.parametrize("messages", ["hello", [1], [ChatMessage(role="user", content="x"), "y"]])
async def test_aget_refuses_messages_that_are_no_chat_messages(
    memory: EpisodicMemory, user: str, messages: Any
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    with pytest.raises(ValidationError, match="list of ChatMessage"):
        await block.aget(messages, session_id="c1")
    _unchanged(block)


async def test_atruncate_refuses_a_token_count_that_is_no_integer(
    memory: EpisodicMemory, user: str
) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    await block.aput(_exchange(), session_id="c1")
    rendered = await block.aget(
        [ChatMessage(role="user", content="Was my order refunded?")], session_id="c2"
    )
    assert rendered
    for bad in ("3", None, True, [1], float("nan")):
        with pytest.raises(ValidationError, match="tokens_to_truncate"):
            await block.atruncate(rendered, bad)  # pyright: ignore[reportArgumentType]
    assert await block.atruncate(rendered, 0) == rendered


async def test_the_lessons_block_refuses_arguments_of_the_wrong_kind(
    memory: EpisodicMemory, user: str, caplog: pytest.LogCaptureFixture
) -> None:
    grader = ProgrammaticGrader(expected_actions=["click('12')"])
    lessons = StepLessonMemory.from_memory(memory, grader=grader)
    page = {"url": "https://helpdesk.example/tickets/7", "elements": ["[12] button 'Priority'"]}
    block = LessonsMemoryBlock(lessons=lessons, current_env=page)
    await lessons.init_episode("ticket-7", user_id=user, agent_id="web", task="Set the priority")
    for messages in ("Set the priority", [1]):
        with pytest.raises(ValidationError, match="list of ChatMessage"):
            await block.aget(messages)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError, match="current_state"):
        await block.aget([ChatMessage(role="user", content="hi")], current_state=["hi"])
    # Bad input is the caller's, not a failing memory: nothing was logged as one.
    assert "lesson retrieval failed" not in caplog.text
    assert await block.aget([ChatMessage(role="user", content="Set the priority")]) == ""
