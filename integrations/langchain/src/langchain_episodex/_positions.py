"""Where a recorded exchange goes in its conversation: message indexes for chains without a thread.

The agent middleware counts a thread's messages. A classic chain's memory and `record_exchange`
see one exchange at a time, so the conversation's length is read from the store: one past the
highest message index of its newest episodes. Without it every exchange was stored as messages
0 to 1, and the `start_index`/`end_index` a retriever's documents carry said nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Generator
from contextlib import contextmanager

from episodex import EpisodicMemory as CoreMemory
from episodex import MemoryScope

__all__ = ["ExchangeCounter", "exchange_slot", "stored_length"]

#: Newest episodes read to find the conversation's highest index. An exchange is at most a few
#: episodes; episodes imported with older times than later ones are the reason for the margin.
READ_WINDOW = 64

_Key = tuple[str, str, str]


async def stored_length(memory: CoreMemory, scope: MemoryScope) -> int:
    """How many messages of the scope's conversation are stored: one past its highest index."""
    assert scope.conversation_id is not None  # the callers check it first
    items = await memory.read_recent(
        READ_WINDOW,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        conversation_id=scope.conversation_id,
    )
    return max((int(item["end_index"]) + 1 for item in items), default=0)


class ExchangeCounter:
    """The next message index of each conversation one memory object records.

    Read from the store once per conversation, then counted here: the exchanges waiting in a
    recorder (the store is down) are not in the store yet, but their indexes are taken.
    """

    def __init__(self) -> None:
        self._next: dict[_Key, int] = {}
        self._guessed: dict[_Key, int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(scope: MemoryScope) -> _Key:
        assert scope.conversation_id is not None  # the callers check it first
        return (scope.user_id, scope.agent_id, scope.conversation_id)

    def known(self, scope: MemoryScope) -> bool:
        """The conversation's next index is counted here already (no store read needed)."""
        with self._lock:
            return self._key(scope) in self._next

    def take(self, scope: MemoryScope, messages: int, stored: int | None) -> int:
        """Reserve `messages` indexes; returns the first.

        Args:
            scope: The conversation.
            messages: How many messages the exchange has.
            stored: The conversation's stored length, used the first time only (a concurrent
                first exchange may have counted it already); None when it could not be read.
                The exchange is then counted on from this object's own exchanges (from 0),
                and the store is read again at the next one.
        """
        key = self._key(scope)
        with self._lock:
            if stored is None and key not in self._next:
                first = self._guessed.get(key, 0)
                self._guessed[key] = first + messages
                return first
            first = self._next.setdefault(key, stored or 0)
            self._next[key] = first + messages
            return first

    def forget(self, scope: MemoryScope) -> None:
        """The conversation was forgotten: count it from the store again."""
        with self._lock:
            self._next.pop(self._key(scope), None)
            self._guessed.pop(self._key(scope), None)


class _InFlight:
    """The exchanges of one conversation being recorded now, and the indexes they took."""

    def __init__(self) -> None:
        self.count = 0
        self.next = 0

    def take(self, stored: int, messages: int) -> int:
        """Reserve `messages` indexes after the stored ones and those taken in flight."""
        with _in_flight_lock:
            first = max(stored, self.next)
            self.next = first + messages
            return first


_in_flight: weakref.WeakKeyDictionary[CoreMemory, dict[_Key, _InFlight]] = (
    weakref.WeakKeyDictionary()
)
_in_flight_lock = threading.Lock()


@contextmanager
def exchange_slot(memory: CoreMemory, scope: MemoryScope) -> Generator[_InFlight]:
    """Record one exchange of `scope`'s conversation: read its stored length, take, write.

    Exchanges recorded at the same time (threads, tasks awaited together) all read the same
    stored length: each must also go after the indexes the others took. The count is kept
    only while one of them is in flight; it is entered before the store is read, so an
    exchange that reads the store after another's write ended sees that write, and one that
    read it before still finds the other's indexes taken here. Once none is in flight the
    store alone counts (so a forgotten conversation starts again at 0).
    """
    assert scope.conversation_id is not None  # the callers check it first
    key = (scope.user_id, scope.agent_id, scope.conversation_id)
    with _in_flight_lock:
        slot = _in_flight.setdefault(memory, {}).setdefault(key, _InFlight())
        slot.count += 1
    try:
        yield slot
    finally:
        with _in_flight_lock:
            slot.count -= 1
            if not slot.count:
                conversations = _in_flight.get(memory, {})
                conversations.pop(key, None)
                if not conversations:
                    _in_flight.pop(memory, None)
