"""Recalled conversation episodes as a prompt block, escaped and within a token budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from episodex._common.budget import drop_until_fits, longest_fitting_prefix, require_budget
from episodex._common.text import xml_attribute, xml_text
from episodex._common.tokens import DEFAULT_ENCODING, TokenCounter, token_counter

__all__ = ["format_recall"]

_SECTIONS = (
    ("same_conversation", "Earlier in this conversation"),
    ("previous_conversations", "From previous conversations"),
)


def _when(value: Any) -> str:
    """A time as the model reads it, marked UTC (stored times are; a naive one is taken so)."""
    if isinstance(value, datetime):
        if value.utcoffset():
            try:
                value = value.astimezone(UTC)
            except OverflowError:  # next to year 1 or 9999: shown with its own offset
                return value.isoformat(sep=" ", timespec="minutes")
        return value.strftime("%Y-%m-%d %H:%M") + " UTC"
    return str(value) if value is not None else ""


def _episode_xml(item: Mapping[str, Any], long_text: str | None = None) -> str:
    attrs = " ".join(
        f"{name}={xml_attribute(str(value))}"
        for name, value in (
            ("id", item.get("point_id", "")),
            ("conversation", item.get("conversation_id", "")),
            ("when", _when(item.get("timestamp_end"))),
            ("score", f"{float(item.get('score', 0.0)):.4f}"),
        )
    )
    long = item.get("long_summary_text", "") if long_text is None else long_text
    parts = [
        f"<episode {attrs}>",
        f"<summary>{xml_text(str(item.get('short_summary_text', '')))}</summary>",
    ]
    if long:
        parts.append(f"<details>{xml_text(str(long))}</details>")
    tools = item.get("tools_invoked") or []
    if tools:
        parts.append(f"<tools>{xml_text(', '.join(map(str, tools)))}</tools>")
    parts.append("</episode>")
    return "\n".join(parts)


def _render(sections: Sequence[tuple[str, str, list[str]]]) -> str:
    lines = ["<recalled_episodes>"]
    for tag, title, episodes in sections:
        if episodes:
            lines.append(f"<{tag} title={xml_attribute(title)}>")
            lines.extend(episodes)
            lines.append(f"</{tag}>")
    lines.append("</recalled_episodes>")
    return "\n".join(lines)


def format_recall(
    result: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    max_tokens: int | None = None,
    encoding: str | TokenCounter = DEFAULT_ENCODING,
) -> str:
    """Render a `recall` result as a `<recalled_episodes>` block for a prompt.

    Stored text is XML-escaped, so a summary can never close or forge the block. With
    `max_tokens`, the lowest-scored episodes are dropped whole until the block fits, then the
    last one's details are shortened, marked `...` (to `...` alone if no word fits); an
    element is never cut in half. Times are shown in UTC, marked so. Returns `""` when there
    is nothing to say (no empty block).

    Args:
        result: What `EpisodicMemory.recall` returned.
        max_tokens: The budget for the whole block, counted with `encoding`.
        encoding: A tiktoken encoding name or a token-counting callable.
    """
    max_tokens = require_budget(max_tokens)
    # Checked before looking at the result: an encoding accepted only while nothing matched
    # would fail the same call once the memory filled.
    count = token_counter(encoding) if max_tokens is not None else None
    ranked: list[tuple[float, int, int, Mapping[str, Any]]] = []
    for s, (key, _) in enumerate(_SECTIONS):
        for i, item in enumerate(result.get(key, [])):
            ranked.append((float(item.get("score", 0.0)), s, i, item))
    if not ranked:
        return ""
    # Keep the best first; ties keep section order.
    ranked.sort(key=lambda r: (-r[0], r[1], r[2]))

    def build(
        kept: Sequence[tuple[float, int, int, Mapping[str, Any]]], last_long: str | None = None
    ) -> str:
        chosen = sorted(kept, key=lambda r: (r[1], r[2]))
        sections: list[tuple[str, str, list[str]]] = []
        for s, (key, title) in enumerate(_SECTIONS):
            xml = [
                _episode_xml(r[3], last_long if (last_long is not None and r is kept[-1]) else None)
                for r in chosen
                if r[1] == s
            ]
            sections.append((key, title, xml))
        return _render(sections)

    if max_tokens is None or count is None:
        return build(ranked)

    def fits(block: str) -> bool:
        return count(block) <= max_tokens

    block, kept = drop_until_fits(ranked, build, fits)
    if block is not None:
        return block
    # One episode left and still too long: shorten its details by words, then drop them.
    words = str(kept[0][3].get("long_summary_text", "")).split()
    found = longest_fitting_prefix(
        len(words),
        lambda k: build(kept, " ".join(words[:k]) + (" ..." if k < len(words) else "")),
        fits,
    )
    if found is not None and found[0] >= 1:
        return found[1]
    # Not one word fits: the details are shown cut to nothing, never left out as if there
    # were none (`_episode_xml` leaves out only an empty long summary).
    minimal = build(kept, "..." if words else "")
    return minimal if fits(minimal) else ""
