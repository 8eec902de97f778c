"""One write lock per collection and storage in this process, shared by every store on it.

With it, a count of the re-index switches this process made there (`switch_count`).

A store checks which ids it may write (an id that names another tenant's point is refused) and
then writes; a re-index catches up with a collection and switches it. Both hold the store's
write lock, and two stores on the same storage must hold the same one: two `EpisodicMemory`
objects opened on one folder (a notebook cell run twice), a task store and a memory sharing an
engine, or two clients of one Qdrant server in one process would otherwise check and write in
between each other, and one tenant's write could replace another's point.

Another process is not covered: the embedded store refuses a second process
(`StoreLockedError`), and a Qdrant server's writers in several processes are not serialised.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["count_switch", "switch_count", "write_lock"]

_guard = threading.Lock()
_locks: weakref.WeakKeyDictionary[Any, dict[str, threading.RLock]] = weakref.WeakKeyDictionary()
_switches: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()


def _scope(engine: object) -> Any:
    return getattr(engine, "storage_scope", None) or engine


def write_lock(engine: object, collection: str) -> threading.RLock:
    """The lock every writer of `collection` on `engine`'s storage holds while it writes.

    Engines that share storage name it in `storage_scope` (every `EdgeEngine` on one folder
    shares its open folder; qdrant-client engines on one server share their address); any
    other engine is its own scope. The lock is re-entrant: a write handed on to a re-indexed
    store's successor takes it again in the same thread.
    """
    scope = _scope(engine)
    with _guard:
        per = _locks.get(scope)
        if per is None:
            per = _locks[scope] = {}
        lock = per.get(collection)
        if lock is None:
            lock = per[collection] = threading.RLock()
        return lock


def switch_count(engine: object, collection: str) -> int:
    """How many times this process has switched `collection` on `engine`'s storage.

    A store compares it with the count it opened at to learn, without asking a server, that
    another store of this process re-indexed its collection (another process's switch it
    does not see).
    """
    with _guard:
        return _switches.get(_scope(engine), {}).get(collection, 0)


def count_switch(engine: object, collection: str) -> None:
    """Record that `collection` on `engine`'s storage now serves another collection."""
    scope = _scope(engine)
    with _guard:
        per = _switches.get(scope)
        if per is None:
            per = _switches[scope] = {}
        per[collection] = per.get(collection, 0) + 1
