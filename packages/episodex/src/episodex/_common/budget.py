"""Fitting a ranked prompt block into a token budget: the one algorithm every block uses.

A block lists items best first. To fit a budget, the lowest-ranked items go first, whole; if
the best item alone is still too long, its text is cut at a word boundary, keeping the most
words that fit (found by binary search, since a longer prefix never renders shorter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from episodex._common.errors import ValidationError
from episodex._common.validation import is_integer

__all__ = ["drop_until_fits", "longest_fitting_prefix", "require_budget"]

T = TypeVar("T")


def require_budget(max_tokens: object) -> int | None:
    """`max_tokens` as given: None (no budget) or an integer >= 0, else `ValidationError`."""
    if max_tokens is None:
        return None
    if not is_integer(max_tokens) or int(max_tokens) < 0:
        raise ValidationError(f"max_tokens must be an integer >= 0 or None, got {max_tokens!r}")
    return int(max_tokens)


def drop_until_fits(
    items: Sequence[T], render: Callable[[Sequence[T]], str], fits: Callable[[str], bool]
) -> tuple[str | None, list[T]]:
    """Drop the last (lowest-ranked) items, whole, until `render(kept)` fits.

    Returns the block that fits and the items kept; the block is None when even the first
    item alone does not fit (then the kept list holds just that item).
    """
    kept = list(items)
    block = render(kept)
    while not fits(block):
        if len(kept) <= 1:
            return None, kept
        kept.pop()
        block = render(kept)
    return block, kept


def longest_fitting_prefix(
    most: int, render: Callable[[int], str], fits: Callable[[str], bool]
) -> tuple[int, str] | None:
    """The largest `k` in `0..most` whose `render(k)` fits, with that rendering; None if none.

    `render(k)` renders the item with its text cut to `k` words; it must grow with `k`.
    """
    lo, hi, best = 0, most, None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = render(mid)
        if fits(candidate):
            best, lo = (mid, candidate), mid + 1
        else:
            hi = mid - 1
    return best
