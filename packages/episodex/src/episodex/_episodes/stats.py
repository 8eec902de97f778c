"""Statistics of one user's episodes with one agent: counts, dates, flows, tools, mood.

`stats` is a method of `EpisodeStore` (its class body binds it; hence its `self`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from episodex._common.validation import require_int
from episodex._engines.collection import tenant_filter
from episodex._episodes.model import readable

if TYPE_CHECKING:
    from episodex._episodes.store import EpisodeStore

__all__ = ["stats"]


def stats(self: EpisodeStore, *, user_id: str, agent_id: str, top: int = 5) -> dict[str, Any]:
    """What this user and agent have: episodes, conversations, dates, flows, tools, mood.

    A stored episode whose fields read here cannot be read back (written by another program or
    an older release) is left out and logged, as every read leaves it out.
    """
    top = require_int("top", top, minimum=1)
    scrolled: list[tuple[str, Mapping[str, Any]]] = []
    fields = (
        "conversation_id",
        "flows_activated",
        "tools_invoked",
        "timestamp_begin",
        "timestamp_end",
        "average_user_sentiment",
    )
    flt = tenant_filter(user_id, agent_id)
    offset: str | None = None
    while True:
        hits, offset = self.engine.scroll(
            self.collection, flt, limit=1024, with_payload=fields, offset=offset
        )
        # An episode stored by another program that cannot be read back is left out (and
        # reported): it would fail the whole summary.
        scrolled.extend((h.id, h.payload) for h in hits if readable(h.id, h.payload, fields))
        if offset is None:
            break
    # Each engine scrolls in its own order (Qdrant Edge by write, a server its own way), so
    # nothing here may depend on it: episodes that ended together go in point-id order and
    # flows or tools used equally often by name, or a store moved to a server told another
    # trend and other top flows.
    scrolled.sort(key=lambda row: (row[1]["timestamp_end"], row[0]))
    rows = [payload for _, payload in scrolled]
    flows = Counter(f for r in rows for f in r.get("flows_activated") or [])
    tools = Counter(t for r in rows for t in r.get("tools_invoked") or [])
    sentiments = [
        float(r["average_user_sentiment"])
        for r in rows
        if r.get("average_user_sentiment") is not None
    ]
    slope = _slope(sentiments)
    return {
        "user_id": user_id,
        "agent_id": agent_id,
        "episodes": len(rows),
        "conversations": len({r["conversation_id"] for r in rows}),
        # The earliest begin of any episode: the one that ended first may have begun later
        # than a long one around it.
        "first_episode_at": datetime.fromtimestamp(min(r["timestamp_begin"] for r in rows), UTC)
        if rows
        else None,
        "last_episode_at": datetime.fromtimestamp(rows[-1]["timestamp_end"], UTC) if rows else None,
        "top_flows": _most_used(flows, top),
        "top_tools": _most_used(tools, top),
        "sentiment_mean": sum(sentiments) / len(sentiments) if sentiments else None,
        "sentiment_trend": slope,
        "sentiment_direction": _direction(slope),
    }


def _most_used(counts: Counter[str], top: int) -> list[tuple[str, int]]:
    """The `top` most counted names, most first; equal counts by name."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]


def _slope(values: Sequence[float]) -> float | None:
    """Least-squares slope of the values against their order (sentiment per episode)."""
    n = len(values)
    if n < 2:
        return None
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    num = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


def _direction(slope: float | None) -> str | None:
    if slope is None:
        return None
    if slope > 0.02:
        return "improving"
    if slope < -0.02:
        return "declining"
    return "stable"
