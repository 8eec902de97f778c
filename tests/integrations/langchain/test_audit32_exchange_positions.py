"""Exchanges recorded by the classic memory and `record_exchange` take their places in the conversation.

Every exchange used to be stored as messages 0 to 0 (the core's defaults), so the
`start_index`/`end_index` a retriever's documents carry said nothing: the third exchange of a
conversation claimed to be its first message. Each exchange now takes the conversation's next
two indexes, read from the store (so a conversation goes on after a restart, and another
writer's exchanges are counted), and a forgotten conversation starts again at 0.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator

import pytest
from episodex import EpisodicMemory as Episodes
from episodex.testing import FailingEngine
from langchain_classic.chains import ConversationChain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicConversationMemory, arecord_exchange, record_exchange
from lc_fakes import RecordingChatModel

AGENT = "assistant"


@pytest.fixture(autouse=True)
def _classic_chains_are_deprecated() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)
        yield


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def _ranges(memory: Episodes, user: str, conversation: str) -> list[tuple[int, int]]:
    items = memory.store.read_recent(
        100, user_id=user, agent_id=AGENT, conversation_id=conversation
    )
    return sorted((int(i["start_index"]), int(i["end_index"])) for i in items)


def _chat(memory: EpisodicConversationMemory, *turns: tuple[str, str]) -> None:
    llm = RecordingChatModel(responses=[AIMessage(a) for _, a in turns], received=[])
    chain = ConversationChain(llm=llm, memory=memory)
    for question, _ in turns:
        chain.invoke({"input": question})


def test_classic_exchanges_take_the_conversations_next_indexes(memory: Episodes) -> None:
    user = _user()
    classic = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="trip"
    )
    _chat(
        classic,
        ("I fly to Lisbon on May 3.", "Noted."),
        ("My seat is 14A.", "Got it."),
        ("I need a vegetarian meal.", "Added."),
    )
    assert _ranges(memory, user, "trip") == [(0, 1), (2, 3), (4, 5)]


def test_a_new_memory_object_goes_on_after_the_stored_conversation(memory: Episodes) -> None:
    user = _user()
    first = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="trip"
    )
    _chat(first, ("I fly to Lisbon on May 3.", "Noted."), ("My seat is 14A.", "Got it."))
    # The process restarts: a new memory object for the same conversation.
    again = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="trip"
    )
    _chat(again, ("I need a vegetarian meal.", "Added."))
    assert _ranges(memory, user, "trip") == [(0, 1), (2, 3), (4, 5)]
    # Another conversation of the same user is counted on its own.
    other = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="hotel"
    )
    _chat(other, ("Book a room near the river.", "Booked."))
    assert _ranges(memory, user, "hotel") == [(0, 1)]


def test_a_cleared_conversation_starts_again_at_zero(memory: Episodes) -> None:
    user = _user()
    classic = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="trip"
    )
    _chat(classic, ("I fly to Lisbon on May 3.", "Noted."), ("My seat is 14A.", "Got it."))
    classic.clear()
    _chat(classic, ("I fly to Porto instead.", "Changed."))
    assert _ranges(memory, user, "trip") == [(0, 1)]


def test_a_classic_exchange_split_in_parts_takes_two_indexes(memory: Episodes) -> None:
    user = _user()
    classic = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="essay"
    )
    long_answer = " ".join(
        f"Paragraph {i} about the history of Lisbon's trams." for i in range(600)
    )
    _chat(classic, ("Tell me everything about Lisbon's trams.", long_answer))
    _chat(classic, ("Thanks, and the funiculars?", "Three of them."))
    ranges = _ranges(memory, user, "essay")
    assert len(ranges) > 2  # the long answer was stored in several episodes
    assert ranges[-1] == (2, 3)
    assert {start for start, _ in ranges[:-1]} <= {0, 1} and {end for _, end in ranges[:-1]} <= {
        0,
        1,
    }


def test_record_exchange_takes_the_conversations_next_indexes(memory: Episodes) -> None:
    user = _user()
    config: RunnableConfig = {"configurable": {"user_id": user, "thread_id": "lcel"}}
    record_exchange(
        memory, "Where is my refund?", "It was sent today.", agent_id=AGENT, config=config
    )
    record_exchange(memory, "How long will it take?", "Three days.", agent_id=AGENT, config=config)
    assert _ranges(memory, user, "lcel") == [(0, 1), (2, 3)]


async def test_arecord_exchange_goes_on_after_the_classic_memorys_exchanges(
    memory: Episodes,
) -> None:
    user = _user()
    classic = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="mixed"
    )
    await classic.asave_context({"input": "I fly to Lisbon."}, {"response": "Noted."})
    await arecord_exchange(
        memory, "My seat is 14A.", "Got it.", user_id=user, agent_id=AGENT, conversation_id="mixed"
    )
    assert _ranges(memory, user, "mixed") == [(0, 1), (2, 3)]


def test_a_restored_conversation_unreadable_at_first_is_read_again_next_time(
    failing: tuple[Episodes, FailingEngine],
) -> None:
    # A conversation stored by an earlier memory object (0-1, 2-3) goes on in a new one while
    # the store can be neither read nor written. That exchange can only be counted from 0; the
    # next one reads the store again and goes after everything stored, instead of counting on
    # from 0 for the rest of the conversation.
    memory, engine = failing
    user = _user()
    before = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="trip"
    )
    before.save_context({"input": "I fly to Lisbon on May 3."}, {"response": "Noted."})
    before.save_context({"input": "My seat is 14A."}, {"response": "Got it."})
    after = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="trip"
    )
    engine.reads = engine.writes = True
    after.save_context({"input": "I need a vegetarian meal."}, {"response": "Added."})
    assert after.stats().pending == 1
    engine.reads = engine.writes = False
    after.save_context({"input": "And a window seat."}, {"response": "Done."})
    after.save_context({"input": "Thanks."}, {"response": "Have a good trip."})
    assert after.stats().pending == 0
    assert _ranges(memory, user, "trip") == [(0, 1), (0, 1), (2, 3), (4, 5), (6, 7)]
