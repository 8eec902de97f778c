"""`Turn`: one-at-a-time for the calls of a session, whatever event loop or thread they run on.

`asyncio.Lock` belongs to one event loop, and LlamaIndex's sync API (`Memory.get`, a chat
engine's `chat` from a thread pool) runs every call on a fresh loop, often in another thread.
A lock per loop let two such calls of one session in at once, so both recorded the same
stretch; one lock shared by the loops fails with "bound to a different event loop". A `Turn`
keeps its state under a thread lock and wakes each waiter on the waiter's own loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from types import TracebackType

__all__ = ["Turn"]


def _wake(waiter: asyncio.Future[None]) -> None:
    # Run on the waiter's loop. A waiter cancelled meanwhile learns in `acquire` that the turn
    # was handed to it, and passes it on.
    if not waiter.done():
        waiter.set_result(None)


class Turn:
    """An async lock that calls on any event loop, in any thread, take in order.

    Use `async with turn:`. Not reentrant, like `asyncio.Lock`.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._taken = False
        # Waiting calls, first come first served: their loop and the future they wait on.
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def acquire(self) -> None:
        """Wait for the turn (on the caller's loop, which runs on meanwhile)."""
        loop = asyncio.get_running_loop()
        with self._guard:
            if not self._taken:
                self._taken = True
                return
            entry = (loop, loop.create_future())
            self._waiters.append(entry)
        try:
            await entry[1]
        except BaseException:
            with self._guard:
                handed = entry not in self._waiters
                if not handed:
                    self._waiters.remove(entry)
            if handed:
                # The turn was handed over as this call gave up (a timeout): pass it on, or
                # every later call of the session would wait forever.
                self.release()
            raise

    def release(self) -> None:
        """Hand the turn to the next waiting call, or free it."""
        with self._guard:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(_wake, waiter)
                except RuntimeError:
                    # Its loop is closed: nothing waits there any more.
                    continue
                return  # still taken: handed to that waiter
            self._taken = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
