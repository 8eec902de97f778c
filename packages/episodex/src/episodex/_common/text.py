"""Short renderings of text for messages and prompts: one `clip`, one bad-lines summary."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["bad_lines_summary", "clip"]


def clip(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """`text` on one line (whitespace runs become one space), cut to `limit` characters.

    A cut text ends with `ellipsis`, counted in the limit, after the cut's trailing spaces.
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ellipsis))].rstrip() + ellipsis


def bad_lines_summary(bad: Sequence[tuple[int, str]], *, what: str = "line", shown: int = 5) -> str:
    """`line 3: why; line 7: why (and 4 more)`: the first `shown` of `(number, reason)` pairs."""
    listed = "; ".join(f"{what} {number}: {why}" for number, why in bad[:shown])
    more = f" (and {len(bad) - shown} more)" if len(bad) > shown else ""
    return listed + more
