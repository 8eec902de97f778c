"""Synchronous twins of the async memories: one private event loop, every coroutine method."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, Self, TypeVar

__all__ = ["SyncTwin"]

T = TypeVar("T")


class _LoopThread:
    """A private event loop in a daemon thread: sync callers submit coroutines to it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="episodex-sync", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def stop(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


class SyncTwin:
    """Exposes every `async def` method of `target` as a blocking method of the same name.

    Each call runs the coroutine on a private event loop in a daemon thread, so a twin is safe
    to call from several threads at once and also works where a loop is already running (a
    notebook, a web server). Attributes that are not coroutine methods pass through as is.
    """

    def __init__(self, target: object) -> None:
        self._target = target
        self._loop = _LoopThread()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_target", "_loop"):
            raise AttributeError(name)
        attr = getattr(self._target, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        """Stop the private event loop."""
        self._loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
