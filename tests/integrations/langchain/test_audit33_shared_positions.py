"""Every writer of one conversation in a process takes its message indexes from one reservation.

Each classic memory object counted its conversation's indexes on its own, from one read of the
store; `record_exchange` read the store each time and counted only its own calls in flight.
Two classic memory objects over one core memory recording the same conversation, or a classic
memory and `record_exchange`, then stored two exchanges as the same messages: one after the
other (the classic memory never saw the other's exchange) or at the same time (both read the
same length). Every writer now goes after the stored messages and after the indexes any other
writer of the conversation took and has not stored yet (in flight, or waiting in a recorder).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid
import warnings
from collections.abc import Iterator

import pytest
from episodex import EngineError
from episodex import EpisodicMemory as Episodes
from episodex.testing import FailingEngine
from langchain_classic.chains import ConversationChain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage
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


def _no_overlap(ranges: list[tuple[int, int]]) -> bool:
    return all(end < start for (_, end), (start, _) in itertools.pairwise(ranges))


def _classic(memory: Episodes, user: str, conversation: str) -> EpisodicConversationMemory:
    return EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id=conversation
    )


def _ask(memory: EpisodicConversationMemory, question: str, answer: str) -> None:
    llm = RecordingChatModel(responses=[AIMessage(answer)], received=[])
    ConversationChain(llm=llm, memory=memory).invoke({"input": question})


def test_two_classic_memories_of_one_conversation_take_turns(memory: Episodes) -> None:
    # One memory object per browser tab (or per worker) of the same conversation.
    user = _user()
    tab, other_tab = _classic(memory, user, "trip"), _classic(memory, user, "trip")
    _ask(tab, "I fly to Lisbon on May 3.", "Noted.")
    _ask(other_tab, "My seat is 14A.", "Got it.")
    _ask(tab, "I need a vegetarian meal.", "Added.")
    _ask(other_tab, "And a window seat.", "Done.")
    assert _ranges(memory, user, "trip") == [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_classic_memory_mixed_with_record_exchange(memory: Episodes) -> None:
    user = _user()
    classic = _classic(memory, user, "mixed")
    _ask(classic, "I fly to Lisbon.", "Noted.")
    record_exchange(
        memory, "My seat is 14A.", "Got it.", user_id=user, agent_id=AGENT, conversation_id="mixed"
    )
    _ask(classic, "I need a vegetarian meal.", "Added.")
    assert _ranges(memory, user, "mixed") == [(0, 1), (2, 3), (4, 5)]


def test_classic_memories_recording_at_once_from_threads(memory: Episodes) -> None:
    user = _user()
    tabs = [_classic(memory, user, "rush") for _ in range(6)]
    start = threading.Barrier(len(tabs))

    def save(n: int) -> None:
        start.wait()
        tabs[n].save_context({"input": f"Question {n}?"}, {"response": f"Answer {n}."})

    workers = [threading.Thread(target=save, args=(n,)) for n in range(len(tabs))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert _ranges(memory, user, "rush") == [(i, i + 1) for i in range(0, 12, 2)]


async def test_classic_memories_and_exchanges_awaited_together(memory: Episodes) -> None:
    user = _user()
    tabs = [_classic(memory, user, "gather") for _ in range(3)]
    await asyncio.gather(
        *(
            tab.asave_context({"input": f"Tab {n}?"}, {"response": "Yes."})
            for n, tab in enumerate(tabs)
        ),
        *(
            arecord_exchange(
                memory, f"Chain {n}?", "No.", user_id=user, agent_id=AGENT, conversation_id="gather"
            )
            for n in range(3)
        ),
    )
    ranges = await asyncio.to_thread(_ranges, memory, user, "gather")
    assert ranges == [(i, i + 1) for i in range(0, 12, 2)]


def test_an_exchange_waiting_in_a_recorder_keeps_its_indexes(
    failing: tuple[Episodes, FailingEngine],
) -> None:
    # The store refuses one write of the classic memory: its exchange waits in the recorder
    # with indexes 2-3. Another writer of the conversation must not be given them too.
    memory, engine = failing
    user = _user()
    classic = _classic(memory, user, "trip")
    _ask(classic, "I fly to Lisbon on May 3.", "Noted.")
    engine.writes = True
    _ask(classic, "My seat is 14A.", "Got it.")
    assert classic.stats().pending == 1
    engine.writes = False
    record_exchange(
        memory, "I need a vegetarian meal.", "Added.", user_id=user, agent_id=AGENT,
        conversation_id="trip",
    )  # fmt: skip
    _ask(_classic(memory, user, "trip"), "And a window seat.", "Done.")
    assert classic.flush() == 0
    ranges = _ranges(memory, user, "trip")
    assert len(ranges) == 4
    assert _no_overlap(ranges), ranges
    assert ranges[:2] == [(0, 1), (2, 3)]


def test_a_failed_exchange_leaves_no_hole_once_written(
    failing: tuple[Episodes, FailingEngine],
) -> None:
    # record_exchange raises when the store is down: its indexes were never used, so the next
    # exchange takes them (the store is what counts once nothing is in flight).
    memory, engine = failing
    user = _user()
    record_exchange(memory, "Hi.", "Hello.", user_id=user, agent_id=AGENT, conversation_id="c")
    engine.writes = True
    with pytest.raises(EngineError):
        record_exchange(memory, "Lost?", "Yes.", user_id=user, agent_id=AGENT, conversation_id="c")
    engine.writes = False
    _ask(_classic(memory, user, "c"), "Still there?", "Yes.")
    assert _ranges(memory, user, "c") == [(0, 1), (2, 3)]


def test_a_cleared_conversation_starts_again_at_zero_for_every_writer(memory: Episodes) -> None:
    user = _user()
    tab, other_tab = _classic(memory, user, "trip"), _classic(memory, user, "trip")
    _ask(tab, "I fly to Lisbon on May 3.", "Noted.")
    _ask(other_tab, "My seat is 14A.", "Got it.")
    tab.clear()
    _ask(other_tab, "I fly to Porto instead.", "Changed.")
    assert _ranges(memory, user, "trip") == [(0, 1)]
