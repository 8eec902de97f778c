"""Where a recorded exchange goes in its conversation: message indexes for chains without a thread.

The agent middleware counts a thread's messages. A classic chain's memory and `record_exchange`
see one exchange at a time, so the conversation's length is read from the store: one past the
highest message index of its newest episodes. Without it every exchange was stored as messages
0 to 1, and the `start_index`/`end_index` a retriever's documents carry said nothing.

Every writer of one conversation in the process (classic memory objects, `record_exchange`
calls, over the same core memory) also goes after the indexes the others took and have not
stored yet: one reservation per core memory and conversation, which they all share. Without
it two writers read the same stored length and stored two exchanges as the same messages.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Generator
from contextlib import contextmanager

from episodex import EpisodicMemory as CoreMemory
from episodex import MemoryScope

__all__ = ["Hold", "exchange_slot", "scope_key", "stored_length"]

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


class _Reservation:
    """The indexes the writers of one conversation took and have not all stored yet."""

    def __init__(self) -> None:
        self.holders = 0
        self.next = 0


_reservations: weakref.WeakKeyDictionary[CoreMemory, dict[_Key, _Reservation]] = (
    weakref.WeakKeyDictionary()
)
# Held for dictionary and counter updates only, never while the store is read or written.
_lock = threading.Lock()


def scope_key(scope: MemoryScope) -> _Key:
    """The conversation a reservation is for."""
    assert scope.conversation_id is not None  # the callers check it first
    return (scope.user_id, scope.agent_id, scope.conversation_id)


class Hold:
    """A writer's claim on its conversation's reservation, taken before the store is read.

    While a hold is not released the reservation lives, and the indexes taken through it stay
    taken for every writer of the conversation. A writer holds while its exchange is in
    flight, and longer while the exchange is not stored (it waits in a recorder). Once no
    writer holds, the reservation is dropped and the store alone counts, so a conversation
    forgotten in the meantime starts again at 0. A hold is taken before the store is read: a
    writer that reads after another's write ended sees that write, and one that read before
    it finds the other's indexes taken here.
    """

    def __init__(self, memory: CoreMemory, scope: MemoryScope) -> None:
        self._memory = memory
        self._key = scope_key(scope)
        with _lock:
            conversations = _reservations.setdefault(memory, {})
            self._reservation = conversations.setdefault(self._key, _Reservation())
            self._reservation.holders += 1
        self._held = True

    def take(self, stored: int | None, messages: int) -> int:
        """Reserve `messages` indexes after the stored ones and those taken; returns the first.

        Args:
            stored: The conversation's stored length; None when it could not be read (the
                exchange then goes after the indexes taken here, from 0 if none).
            messages: How many messages the exchange has.
        """
        with _lock:
            first = max(stored or 0, self._reservation.next)
            self._reservation.next = first + messages
            return first

    def release(self) -> None:
        """The exchange is stored (or never will be): its indexes need no keeping. Idempotent."""
        with _lock:
            if not self._held:
                return
            self._held = False
            self._reservation.holders -= 1
            if self._reservation.holders:
                return
            conversations = _reservations.get(self._memory)
            if conversations is None:
                return
            if conversations.get(self._key) is self._reservation:
                del conversations[self._key]
            if not conversations:
                del _reservations[self._memory]


@contextmanager
def exchange_slot(memory: CoreMemory, scope: MemoryScope) -> Generator[Hold]:
    """Record one exchange of `scope`'s conversation: hold, read its stored length, take, write.

    The hold is released when the block ends, written or failed: an exchange that was not
    written leaves its indexes to the next one (a gap at most, never two exchanges at once).
    """
    hold = Hold(memory, scope)
    try:
        yield hold
    finally:
        hold.release()
