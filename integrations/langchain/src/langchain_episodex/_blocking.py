"""Run the core's coroutines from LangChain's synchronous entry points."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code and return its result.

    The sync methods of the adapters are thin twins of the async ones: they run the same
    coroutine. Outside an event loop it runs on a fresh loop; inside one (a notebook, a sync
    tool called from async code) it runs on a fresh loop in a worker thread, because a
    running loop cannot be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
