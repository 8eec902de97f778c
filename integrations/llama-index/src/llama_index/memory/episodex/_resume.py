"""Where a session the block has not seen stands: how much of its history is stored already.

`Memory` can keep its short-term history in a database that outlives the process
(`async_database_uri="sqlite+aiosqlite:///chat.db"`), so a new block may meet a session in
the middle: the store holds its episodes up to some index, and the history given to the
block begins somewhere before that. Counting that session from 0 would store its recorded
messages again and give its later episodes indexes its earlier ones hold. The stored
episodes' texts are the messages' own lines (`message_lines`), so the history is lined up
with them: the longest run of its first messages that the stored texts end with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.memory.episodex._messages import message_lines

from episodex import span_episodes

__all__ = ["READ_WINDOW", "recorded_overlap"]

READ_WINDOW = 512
"""Episodes read, besides four per message given, to line a history up with the store."""

# One message as its line in an unsplit long summary: no limit that would split it.
_UNSPLIT = 1 << 40


@dataclass(frozen=True, slots=True)
class _Stored:
    """One stored episode, or the parts of one message split into several, by message range."""

    start: int
    end: int
    texts: tuple[str, ...]
    parts: bool


def _units(items: Sequence[dict[str, Any]]) -> list[_Stored]:
    units: list[_Stored] = []
    parts: dict[int, dict[int, str]] = {}
    counts: dict[int, int] = {}
    for item in items:
        start, end, text = item["start_index"], item["end_index"], item["long_summary_text"]
        meta = item.get("metadata") or {}
        part, total = meta.get("part"), meta.get("parts")
        if isinstance(part, int) and isinstance(total, int) and start == end:
            parts.setdefault(start, {})[part] = text
            counts[start] = total
        else:
            units.append(_Stored(start, end, (text,), parts=False))
    for index, pieces in parts.items():
        # A message with a part missing cannot be checked: it covers nothing.
        if sorted(pieces) == list(range(1, counts[index] + 1)):
            units.append(_Stored(index, index, tuple(pieces[p] for p in sorted(pieces)), True))
    return units


def recorded_overlap(
    items: Sequence[dict[str, Any]],
    messages: Sequence[ChatMessage],
    recorded: int,
    *,
    whole: bool,
    max_chars: int,
) -> int:
    """How many messages before index `recorded` the history `messages` begins with.

    Args:
        items: The session's stored episodes (the newest ones), as `read_recent` gives them.
        messages: The whole short-term history (`whole`), or its oldest messages, leaving it.
        recorded: One past the highest stored index: how many messages are stored.
        whole: `messages` is the whole history, so it holds every stored message it overlaps.
        max_chars: The block's `long_summary_chars`, by which a long message was split.

    Returns:
        The overlap `k`: `messages` begins at index `recorded - k`. The longest one every
        stored text it meets agrees with; 0 when none does (the history is all new).
    """
    units = _units(items)
    if not units or not messages:
        return 0
    lines = message_lines(messages)
    # Each message's line in a long summary; "" for a blank one (skipped, its index counts).
    rendered = [
        "\n".join(e.long_summary for e in span_episodes([line], max_chars=_UNSPLIT))
        for line in lines
    ]
    lowest = min(unit.start for unit in units)
    longest = min(recorded, len(messages)) if whole else recorded - lowest
    for overlap in range(longest, 0, -1):
        if _agrees(
            units, lines, rendered, recorded - overlap, min(overlap, len(messages)), max_chars
        ):
            return overlap
    return 0


def _agrees(
    units: list[_Stored],
    lines: list[Any],
    rendered: list[str],
    first: int,
    known: int,
    max_chars: int,
) -> bool:
    """Whether messages `0..known-1` at indexes `first...` match every stored text they meet."""
    last = first + known - 1
    covered = [False] * known
    evidence = False
    for unit in units:
        if unit.end < first or unit.start > last:
            continue
        low, high = max(unit.start, first), min(unit.end, last)
        for index in range(low, high + 1):
            covered[index - first] = True
        if unit.parts:
            split = span_episodes([lines[low - first]], max_chars=max_chars)
            if tuple(e.long_summary for e in split) != unit.texts:
                return False
            evidence = True
            continue
        text = "\n".join(r for r in rendered[low - first : high - first + 1] if r)
        if not text:
            continue
        stored, piece = f"\n{unit.texts[0]}\n", f"\n{text}\n"
        if unit.start >= first and not stored.startswith(piece):
            return False
        if unit.end <= last and not stored.endswith(piece):
            return False
        if piece not in stored:
            return False
        evidence = True
    return evidence and all(covered)
