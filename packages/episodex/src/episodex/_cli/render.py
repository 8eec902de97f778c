"""How the command line prints results for people: aligned tables, no Python reprs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = ["recall_lines", "stats_table", "table"]


def table(rows: Sequence[Sequence[str]], *, header: Sequence[str] | None = None) -> list[str]:
    """Rows as left-aligned columns (numbers right-aligned), two spaces apart."""
    everything = [list(header)] if header else []
    everything += [list(r) for r in rows]
    if not everything:
        return []
    widths = [max(len(r[i]) for r in everything) for i in range(len(everything[0]))]

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(w) if _numeric(cell) else cell.ljust(w)
            for cell, w in zip(row, widths, strict=True)
        ]
        return "  ".join(cells).rstrip()

    out = [line(r) for r in everything]
    if header:
        out.insert(1, "  ".join("-" * w for w in widths))
    return out


def _numeric(cell: str) -> bool:
    return cell.replace(".", "", 1).replace("-", "", 1).replace("+", "", 1).isdigit()


def _when(value: object) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    return "-" if value is None else str(value)


def _number(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:+.3f}"
    return str(value)


def stats_table(stats: Mapping[str, Any]) -> list[str]:
    """The `stats` answer as a summary table and one table per top list."""
    lines = [f"user {stats['user_id']} with agent {stats['agent_id']}", ""]
    lines += table(
        [
            ["episodes", str(stats["episodes"])],
            ["conversations", str(stats["conversations"])],
            ["first episode", _when(stats["first_episode_at"])],
            ["last episode", _when(stats["last_episode_at"])],
            ["sentiment mean", _number(stats["sentiment_mean"])],
            ["sentiment trend", _number(stats["sentiment_trend"])],
            ["sentiment direction", str(stats["sentiment_direction"] or "-")],
        ]
    )
    for key, title in (("top_flows", "flow"), ("top_tools", "tool")):
        pairs = stats[key]
        lines.append("")
        if pairs:
            lines += table([[str(name), str(n)] for name, n in pairs], header=[title, "episodes"])
        else:
            lines.append(f"no {title}s recorded")
    return lines


def recall_lines(result: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """A recall answer: per side, one row per episode, best first."""
    lines: list[str] = []
    for key in ("same_conversation", "previous_conversations"):
        lines.append(f"{key.replace('_', ' ')}:")
        rows = [
            [
                f"{item['score']:.4f}",
                ", ".join(f"{s} #{v['rank']}" for s, v in item.get("streams", {}).items()) or "-",
                str(item["conversation_id"]),
                str(item["point_id"]),
                str(item["short_summary_text"]),
            ]
            for item in result[key]
        ]
        if rows:
            lines += [
                "  " + r
                for r in table(
                    rows, header=["score", "streams", "conversation", "point id", "summary"]
                )
            ]
        else:
            lines.append("  (none)")
    return lines
