"""Recalled task episodes as a `<recalled_episodes>` prompt block, within a token budget."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from episodex._common.budget import drop_until_fits, longest_fitting_prefix, require_budget
from episodex._common.errors import ValidationError
from episodex._common.tokens import DEFAULT_ENCODING, TokenCounter, token_counter
from episodex._tasks.model import Episode, render_xml

__all__ = ["Fields", "fit_block", "render_episodes"]

# Fields a budget may shorten; times and ids are kept whole or not at all.
_UNTRIMMABLE = frozenset({"completed_at", "id_", "task_id"})

Fields = list[tuple[str, str]]


def _block(items: Sequence[Fields]) -> str:
    lines = ["<recalled_episodes>"]
    lines.extend(render_xml(fields, indent="  ") for fields in items)
    lines.append("</recalled_episodes>")
    return "\n".join(lines)


def fit_block(items: list[Fields], max_tokens: int | None, count: TokenCounter) -> str:
    """The block of `items` (best first) within `max_tokens`, or "" if nothing fits."""
    if not items:
        return ""
    if max_tokens is None:
        return _block(items)

    def fits(block: str) -> bool:
        return count(block) <= max_tokens

    block, kept = drop_until_fits(items, _block, fits)
    if block is not None:
        return block
    # The best episode alone is too long: shorten its longest fields, word by word. Text is
    # cut before it is escaped, so no element and no entity is ever cut in half.
    fields = list(kept[0])
    order = sorted(
        (i for i, (name, _) in enumerate(fields) if name not in _UNTRIMMABLE),
        key=lambda i: -len(fields[i][1]),
    )
    for i in order:
        name, text = fields[i]
        words = text.split()

        def cut(k: int, i: int = i, name: str = name, words: list[str] = words) -> str:
            trial = list(fields)
            trial[i] = (name, " ".join(words[:k]) + " ..." if k else "...")
            return _block([trial])

        found = longest_fitting_prefix(len(words) - 1, cut, fits)
        if found is not None:
            return found[1]
        fields[i] = (name, "...")
    return ""


def render_episodes(
    episodes: Iterable[Episode],
    *,
    max_tokens: int | None = None,
    include: Iterable[str] | None = None,
    encoding: str | TokenCounter = DEFAULT_ENCODING,
) -> str:
    """Render episodes, best first, as one `<recalled_episodes>` block.

    Stored text is escaped and element names are validated, so no episode can close or forge
    the block. With `max_tokens`, the lowest-ranked episodes are dropped whole until the block
    fits, then the last one's longest fields are shortened; no element is cut in half.

    Args:
        episodes: Ranked episodes; a repeated id is shown once, at its best rank.
        max_tokens: The budget for the whole block.
        include: The episode fields shown (None or empty: the defaults).
        encoding: A tiktoken encoding name or a token-counting callable.

    Returns:
        The block, or `""` when there is nothing to show or nothing fits.
    """
    budget = require_budget(max_tokens)
    seen: set[str] = set()
    items: list[Fields] = []
    for episode in episodes:
        if not isinstance(episode, Episode):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"expected Episode objects, got {type(episode).__name__}")
        if episode.id_ not in seen:
            seen.add(episode.id_)
            items.append(episode.fields(include))
    return fit_block(items, budget, token_counter(encoding))
