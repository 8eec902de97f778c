"""Periods a query names outright: `on 9 May, 2023`, `in July 2022`, `summer 2021`, `in 2023`.

A recall whose query names one searches once more among the episodes of that period (the
`dated` stream): "What did Joanna watch on 1 May, 2022?" is about the episodes told around that
day, whatever else matches the words. Only dates that need no reference time are read, in
English: a day (`9 May 2023`, `May 9th, 2023`, `2023-05-09`), a month with its year, a season
with its year (northern hemisphere; winter spans both of its years) and a year after a
preposition (`in 2023`, `during 2023`). "Yesterday", "last week" or a month without a year name
nothing here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from episodex._engines.plan import Filter, Range

__all__ = ["DATED_SLACK", "named_period", "period_filter"]

#: How far the `dated` stream looks beyond a named period on each side: people tell of an event
#: some days after it (chosen on the LoCoMo dev split with 7, 14 and 31; see benchmarks/README.md).
DATED_SLACK = timedelta(days=14)

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_SEASONS = {"spring": (3, 6), "summer": (6, 9), "fall": (9, 12), "autumn": (9, 12)}
#: Each pattern and how its groups read; tried in this order, and a later one never reads the
#: text an earlier one did ("9 May 2023" is a day, not also the month "May 2023").
_PATTERNS = (
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month-day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("iso", re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)),
    ("season", re.compile(rf"\b(spring|summer|fall|autumn|winter),?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("year", re.compile(rf"\b(?:in|during|throughout)\s+(?:the\s+year\s+)?{_YEAR}\b", re.I)),
)


def _month(year: int, month: int) -> datetime:
    """The first instant of a month; months past 12 or below 1 roll into the next/previous year."""
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC)


def _read(kind: str, groups: tuple[str, ...]) -> tuple[datetime, datetime] | None:
    try:
        if kind in ("day", "month-day", "iso"):
            if kind == "day":
                day, month, year = int(groups[0]), _MONTHS[groups[1].lower()], int(groups[2])
            elif kind == "month-day":
                day, month, year = int(groups[1]), _MONTHS[groups[0].lower()], int(groups[2])
            else:
                year, month, day = (int(g) for g in groups)
            start = datetime(year, month, day, tzinfo=UTC)
            return start, start + timedelta(days=1)
    except ValueError:  # 31 February, month 13
        return None
    if kind == "month":
        month, year = _MONTHS[groups[0].lower()], int(groups[1])
        return _month(year, month), _month(year, month + 1)
    if kind == "season":
        season, year = groups[0].lower(), int(groups[1])
        if season == "winter":  # "winter 2023" is read as either of the winters 2023 touches
            return _month(year, 0), _month(year, 15)
        first, end = _SEASONS[season]
        return _month(year, first), _month(year, end)
    year = int(groups[0])
    return _month(year, 1), _month(year + 1, 1)


def named_period(text: str) -> tuple[datetime, datetime] | None:
    """The period `text` names, as `(start, end)` in UTC, end exclusive; None if it names none.

    When it names several, the period spans them all ("between May 2022 and July 2022").
    """
    found: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            period = _read(kind, match.groups())
            if period is not None:
                found.append(period)
                taken.append(match.span())
    if not found:
        return None
    return min(p[0] for p in found), max(p[1] for p in found)


def period_filter(period: tuple[datetime, datetime]) -> Filter:
    """Episodes whose time span meets `period` widened by `DATED_SLACK` on each side."""
    start, end = period[0] - DATED_SLACK, period[1] + DATED_SLACK
    return Filter(
        must=(
            Range("timestamp_begin", lt=end.timestamp()),
            Range("timestamp_end", gte=start.timestamp()),
        )
    )
