"""A small pool of helper threads for work one call can overlap with its own (query encoders).

A recall encodes its query with the dense model and with SPLADE; both spend their time inside
ONNX Runtime with the GIL released, so running one on a helper thread while the calling thread
runs the other takes the shorter of the two off every recall on a machine with a free core.

The pool is made on first use and again in a forked child (a child inherits the parent's pool
object but not its threads, and would wait forever on it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["both"]

A = TypeVar("A")
B = TypeVar("B")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pid = 0


def _helpers() -> ThreadPoolExecutor:
    global _pool, _pid
    with _lock:
        if _pool is None or _pid != os.getpid():
            # One helper per core: under many concurrent calls the helpers queue, and the
            # calling threads still do their own half, so no more work runs than without them.
            _pool = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 2, thread_name_prefix="episodex-helper"
            )
            _pid = os.getpid()
        return _pool


def both(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """Run `second` on a helper thread while this thread runs `first`; return both results.

    An exception from either is raised here, after both have finished (nothing is left running
    behind the caller's back); when both fail, `first`'s is raised.
    """
    later: Future[B] = _helpers().submit(second)
    try:
        a = first()
    except BaseException:
        # Wait for the helper so its work does not outlive the failed call.
        try:
            later.result()
        except BaseException:
            pass
        raise
    return a, later.result()
