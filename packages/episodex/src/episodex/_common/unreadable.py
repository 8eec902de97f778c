"""Stored points that cannot be read back: left out of reads, and reported once each.

A point written by another program or an older release (a field of the wrong type, a time no
`datetime` holds, a missing field) must not cost its user every other record: reads leave it
out and log it with its id, once per process and point, so a recall made every turn does not
repeat the warning every turn. Exports write such a point as stored (their own docstrings
say how).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

__all__ = ["read_readable", "readable_time", "report_unreadable"]

H = TypeVar("H")
T = TypeVar("T")

_log = logging.getLogger("episodex")
_lock = threading.Lock()
_reported: set[tuple[str, str, str]] = set()
#: Most points remembered as reported; past it the set starts again (a warning may repeat).
_MAX_REPORTED = 10_000


def report_unreadable(
    kind: str, point_id: str, why: str, *, done: str = "reads leave it out"
) -> None:
    """Log that `kind` (`"episode"`, `"task episode"`, ...) `point_id` cannot be read, and why.

    Logged once per kind, point id and `done` (what the read did about it) in a process.
    """
    with _lock:
        if (kind, point_id, done) in _reported:
            return
        if len(_reported) >= _MAX_REPORTED:
            _reported.clear()
        _reported.add((kind, point_id, done))
    _log.warning(
        "stored %s %s cannot be read back (%s), so %s; it was written by another program or "
        "an older release: delete it, or store it again corrected",
        kind,
        point_id,
        why,
        done,
    )


def readable_time(value: object) -> datetime | None:
    """`value` (stored epoch seconds) as a UTC datetime, or None if it is no such time.

    None for a bool, a string, NaN, infinity, and a number outside the years `datetime` holds.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, ValueError, OSError):
        return None


def read_readable(
    wanted: int, read: Callable[[int], Sequence[H]], keep: Callable[[H], T | None]
) -> list[T]:
    """The first `wanted` of what `read(limit)` finds that `keep` can read back.

    `keep` turns a hit into its record, or reports it (`report_unreadable`) and returns None.
    `read` is asked again for as many more as were left out, so a point that cannot be read
    back costs a read neither its other records nor a place in the list.
    """
    asked = wanted
    while True:
        hits = read(asked)
        kept = [record for record in map(keep, hits) if record is not None]
        if len(kept) >= wanted or len(hits) < asked:
            return kept[:wanted]
        asked += len(hits) - len(kept)
