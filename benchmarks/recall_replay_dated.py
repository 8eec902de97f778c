"""The `dated` stream, replayed offline and checked by leaving one conversation out.

    .venv/bin/python benchmarks/recall_replay_dated.py   # writes results/recall_quality_replay_dated.md

Uses `recall_replay.py`'s replay of the five-stream recall (see its docstring). A question that
names a period (`episodex.named_period`: 60 of the 505 dev questions, e.g. "What did Joanna
watch on 1 May, 2022?", "Where did Joanna travel to in July 2022?") gets a sixth stream: one of
the five searched again among the episodes whose session date lies in that period widened by
a slack each side, fused by weighted RRF with its own weight. Four checks:
- which stream to search again, the slack and the weight (125 settings), against the five
  streams alone;
- one or two dated streams (dense short with long, BM25 or a SPLADE stream);
- the slack before and after the period apart (60 settings), against the new default;
- the five weights and k re-gridded with the chosen dated stream (729 settings), against the
  new default.
"""

from __future__ import annotations

import itertools
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_replay as rr
from _common import RESULTS, load_locomo
from episodex import named_period
from episodex._episodes.periods import DATED_SLACK
from episodex._episodes.store import DEFAULT_DATED_WEIGHT, DEFAULT_RRF_K, DEFAULT_WEIGHTS
from recall_quality import parse_session_date

Period = tuple[datetime, datetime] | None


class Dated:
    """Per conversation: each episode's session time and each question's named period."""

    def __init__(self, base: list[rr.Scores]) -> None:
        self.base = base
        self.ranks = [rr.rankings(scores, 100) for scores in base]
        convs = {c.name: c for c in load_locomo()}
        self.times: list[np.ndarray] = []
        self.periods: list[list[Period]] = []
        for d in rr.DATA:
            when = {t.dia_id: parse_session_date(t.date) for t in convs[d["name"]].turns}
            self.times.append(np.array([when[x].timestamp() for x in d["dia"]]))  # type: ignore[union-attr]
            self.periods.append([named_period(q) for q in d["questions"]])
        self._memo: dict[tuple[int, int, str, int | tuple[int, int]], np.ndarray] = {}

    def dated_ranking(
        self, conv: int, question: int, stream: str, slack: int | tuple[int, int]
    ) -> np.ndarray:
        """Stream's ranking among the episodes of the question's period (empty if it names none).

        `slack` widens the period by that many days each side, or (before, after) days.
        """
        key = (conv, question, stream, slack)
        before, after = slack if isinstance(slack, tuple) else (slack, slack)
        if key not in self._memo:
            period = self.periods[conv][question]
            order = np.zeros(0, dtype=int)
            if period is not None:
                lo = (period[0] - timedelta(days=before)).timestamp()
                hi = (period[1] + timedelta(days=after)).timestamp()
                t = self.times[conv]
                idx = np.flatnonzero((t >= lo) & (t < hi))
                scores = self.base[conv][stream][question]
                order = idx[np.argsort(-scores[idx], kind="stable")]
                if stream not in ("short", "long"):
                    order = order[scores[order] > 0]
            self._memo[key] = order[:100]
        return self._memo[key]

    def run(
        self,
        dated: dict[str, float],
        slack: int | tuple[int, int] = DATED_SLACK.days,
        weights: dict[str, float] = DEFAULT_WEIGHTS,
        k: int = DEFAULT_RRF_K,
    ) -> rr.Result:
        out: rr.Result = {}
        for ci, d in enumerate(rr.DATA):
            hits = np.zeros(3)
            for qi in range(len(d["questions"])):
                acc: dict[int, float] = {}
                lists = [(w, self.ranks[ci][s][qi]) for s, w in weights.items()]
                lists += [(w, self.dated_ranking(ci, qi, s, slack)) for s, w in dated.items()]
                for w, docs in lists:
                    if w > 0:
                        for pos, doc in enumerate(docs):
                            acc[int(doc)] = acc.get(int(doc), 0.0) + w / (k + pos + 1)
                top = sorted(acc, key=lambda x: -acc[x])[:10]
                hits += rr.targets([d["dia"][i] for i in top], d["evidence"][qi])
            out[d["name"]] = (hits, len(d["questions"]))
        return out


def main() -> None:
    start = time.perf_counter()
    dated = Dated(rr.base_scores())
    undated = dated.run({})
    default = dated.run({"short": DEFAULT_DATED_WEIGHT})
    named = sum(p is not None for conv in dated.periods for p in conv)
    parts = [
        "# The `dated` stream: offline replay with leave-one-conversation-out",
        "",
        "Written by `benchmarks/recall_replay_dated.py`. Figures are turn any@5 / turn any@10 / "
        f"session any@5, dev split, 505 questions, {named} of which name a period. Five streams "
        f"alone: {rr.fmt(rr.pct(undated))}; with the default dated stream (dense short, slack "
        f"{DATED_SLACK.days} days, weight {DEFAULT_DATED_WEIGHT:g}): {rr.fmt(rr.pct(default))}.",
        "",
    ]
    grid: list[tuple[str, rr.Result]] = []
    for stream, slack, weight in itertools.product(
        ("short", "long", "bm25", "splade", "splade_short"),
        (0, 3, 7, 14, 31),
        (0.1, 0.2, 0.3, 0.5, 1.0),
    ):
        grid.append(
            (f"{stream}, slack {slack}, weight {weight:g}", dated.run({stream: weight}, slack))
        )
    parts.append(
        rr.loo_section(
            "Which stream, slack (days) and weight; against the five streams alone",
            "The stream searched again within the period.",
            grid,
            undated,
            top=10,
        )
    )
    pairs: list[tuple[str, rr.Result]] = []
    for other, w1, w2, slack in itertools.product(
        ("long", "bm25", "splade", "splade_short"), (0.2, 0.3, 0.5), (0.1, 0.2, 0.3), (7, 14, 31)
    ):
        pairs.append(
            (
                f"short {w1:g} + {other} {w2:g}, slack {slack}",
                dated.run({"short": w1, other: w2}, slack),
            )
        )
    parts.append(
        rr.loo_section(
            "Two dated streams; against the five streams alone",
            "Dense short and one other stream, both within the period.",
            grid + pairs,
            undated,
            top=10,
        )
    )
    asymmetric = [
        (
            f"{before} days before, {after} after, weight {w:g}",
            dated.run({"short": w}, (before, after)),
        )
        for before, after, w in itertools.product(
            (0, 3, 7, 14, 31), (7, 14, 31, 60), (0.2, 0.3, 0.5)
        )
    ]
    parts.append(
        rr.loo_section(
            "Slack before and after the period; against the new default",
            "People tell of an event after it: a wider slack after the period than before it.",
            asymmetric,
            default,
            top=6,
        )
    )
    weights: list[tuple[str, rr.Result]] = []
    for sd, bm, sp, ss, k, wd in itertools.product(
        (0.03, 0.05, 0.1),
        (0.2, 0.3, 0.4),
        (0.1, 0.2, 0.3),
        (0.1, 0.2, 0.3),
        (10, 20, 30),
        (0.2, 0.3, 0.5),
    ):
        w = {"short": sd, "long": sd, "bm25": bm, "splade": sp, "splade_short": ss}
        label = f"{sd:g}/{sd:g}/{bm:g}/{sp:g}/{ss:g}, k={k}, dated {wd:g}"
        weights.append((label, dated.run({"short": wd}, weights=w, k=k)))
    parts.append(
        rr.loo_section(
            "The five weights and k with the dated stream; against the new default",
            "Dense short/long, BM25, SPLADE, SPLADE-short weights, rrf_k and the dated weight.",
            weights,
            default,
            top=8,
        )
    )
    parts.append(f"Run time {time.perf_counter() - start:.0f} s.")
    path = RESULTS / "recall_quality_replay_dated.md"
    path.write_text("\n".join(parts) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
