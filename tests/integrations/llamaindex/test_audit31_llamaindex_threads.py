"""One `EpisodicMemoryBlock` used from several threads, each with its own event loop.

LlamaIndex's sync API (`Memory.get`/`put`, `chat_engine.chat` from a thread pool) runs each
call on a fresh event loop. The block's per-session turn was an `asyncio.Lock` per event loop:
a call on a second loop replaced the first one's lock with its own, so two threads of one
session read the same position, summarised the same stretch and both recorded it (stored
twice). Now the turn is one per session whatever the loop, so each message is recorded once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest
from episodex import EpisodicMemory
from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex import EpisodicMemoryBlock

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"
THREADS = 6
# How long a summarizer waits for a second call to join it. With one turn per session none
# can, so the wait runs out once per test; it is not what the test synchronises on.
CROWD_WAIT = 1.0


class _CrowdSummarizer:
    """A plain summarizer (run in a worker thread) that notes calls summarising at once.

    A call waits for another to come in while it summarises; two calls inside together
    (the same session's turn taken twice) are counted in `most_inside`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self.most_inside = 0
        self._crowd = threading.Event()
        self.asked = threading.Event()

    def __call__(self, prompt: str) -> str:
        self.asked.set()
        with self._lock:
            self._inside += 1
            self.most_inside = max(self.most_inside, self._inside)
            if self._inside >= 2:
                self._crowd.set()
        self._crowd.wait(CROWD_WAIT)
        with self._lock:
            self._inside -= 1
        return "The user reported a broken blender and got a refund."


def _history() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="My blender from order 1234 arrived broken."),
        ChatMessage(role="assistant", content="Sorry! I have opened a refund for it."),
        ChatMessage(role="user", content="Thanks, and when does the refund arrive?"),
    ]


async def _ranges(memory: EpisodicMemory, user: str, conversation: str) -> list[tuple[int, int]]:
    items = await memory.read_recent(
        100, user_id=user, agent_id=AGENT, conversation_id=conversation
    )
    return sorted((e["start_index"], e["end_index"]) for e in items)


def _in_threads(call: object, count: int = THREADS) -> list[object]:
    """`call(i)` in `count` threads started together; their results, or their errors."""
    start = threading.Barrier(count, timeout=30)

    def run(i: int) -> object:
        start.wait()
        try:
            return call(i)  # type: ignore[operator]
        except Exception as exc:
            return exc

    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(run, i) for i in range(count)]
        return [f.result(timeout=60) for f in futures]


async def test_threads_with_their_own_loops_record_a_session_once(
    memory: EpisodicMemory, user: str
) -> None:
    summarizer = _CrowdSummarizer()
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, summarizer=summarizer)
    messages = _history()

    def read(i: int) -> object:
        # What `Memory.get()` does in a worker thread: the block's aget on a fresh loop.
        return asyncio.run(block.aget(messages=messages, session_id="c1"))

    outcomes = await asyncio.to_thread(_in_threads, read)
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    await block.recorder.flush()
    # The exchange of messages 0..1, once (message 2 waits for its answer).
    assert await _ranges(memory, user, "c1") == [(0, 1)]
    assert summarizer.most_inside == 1


async def test_a_flush_from_another_thread_while_a_read_summarises_records_once(
    memory: EpisodicMemory, user: str
) -> None:
    summarizer = _CrowdSummarizer()
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, summarizer=summarizer)
    messages = _history()
    for message in messages:  # as Memory stamps them
        message.additional_kwargs["session_id"] = "c1"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        read = pool.submit(asyncio.run, block.aget(messages=messages, session_id="c1"))
        assert summarizer.asked.wait(30)  # the read summarises the exchange 0..1
        # Memory flushes that exchange out of short-term memory meanwhile, in another thread.
        flush = pool.submit(asyncio.run, block.aput(messages[:2], from_short_term_memory=True))
        read.result(timeout=60)
        flush.result(timeout=60)
    await block.recorder.flush()
    assert await _ranges(memory, user, "c1") == [(0, 1)]
    assert summarizer.most_inside == 1


async def test_sessions_of_many_threads_stay_apart(memory: EpisodicMemory, user: str) -> None:
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)

    def read(i: int) -> object:
        history = [
            ChatMessage(role="user", content=f"Question {i} about order {1000 + i}."),
            ChatMessage(role="assistant", content=f"Answer {i}."),
            ChatMessage(role="user", content=f"Follow-up {i}."),
        ]
        # Twice per thread, each on a fresh loop: the session's turn is taken from two loops.
        asyncio.run(block.aget(messages=history, session_id=f"s{i}"))
        return asyncio.run(block.aget(messages=history, session_id=f"s{i}"))

    outcomes = await asyncio.to_thread(_in_threads, read, 8)
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    await block.recorder.flush()
    for i in range(8):
        items = await memory.read_recent(100, user_id=user, agent_id=AGENT, conversation_id=f"s{i}")
        assert [(e["start_index"], e["end_index"]) for e in items] == [(0, 1)]
        assert f"order {1000 + i}" in items[0]["long_summary_text"]


async def test_a_sync_read_inside_a_running_loop_records_once(
    memory: EpisodicMemory, user: str
) -> None:
    # A notebook cell or an async handler calling the sync API: LlamaIndex runs the call on a
    # fresh loop in another thread while this loop waits, after this loop used the block.
    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT)
    messages = _history()
    await block.aget(messages=messages[:1], session_id="c1")
    asyncio_run(block.aget(messages=messages, session_id="c1"))
    await block.aget(messages=messages, session_id="c1")
    await block.recorder.flush()
    assert await _ranges(memory, user, "c1") == [(0, 1)]


async def test_a_call_given_up_while_waiting_for_its_turn_does_not_block_the_session(
    memory: EpisodicMemory, user: str
) -> None:
    asked, go = threading.Event(), threading.Event()

    def held(prompt: str) -> str:
        asked.set()
        go.wait(30)
        return "The user reported a broken blender and got a refund."

    block = EpisodicMemoryBlock(memory=memory, user_id=user, agent_id=AGENT, summarizer=held)
    messages = _history()

    async def impatient() -> None:
        # A request with a deadline, on its own loop, waiting for the session's turn.
        await asyncio.wait_for(block.aget(messages=messages, session_id="c1"), 0.2)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(asyncio.run, block.aget(messages=messages, session_id="c1"))
        assert asked.wait(30)
        with pytest.raises(TimeoutError):
            pool.submit(asyncio.run, impatient()).result(timeout=60)
        go.set()
        first.result(timeout=60)
        # The session's next call, on yet another loop, gets its turn.
        later = [*messages, ChatMessage(role="assistant", content="In 3 days.")]
        later.append(ChatMessage(role="user", content="Can I get a replacement instead?"))
        pool.submit(asyncio.run, block.aget(messages=later, session_id="c1")).result(timeout=60)
    await block.recorder.flush()
    assert await _ranges(memory, user, "c1") == [(0, 1), (2, 3)]
