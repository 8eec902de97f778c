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
from datetime import UTC, datetime

__all__ = ["readable_time", "report_unreadable"]

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
