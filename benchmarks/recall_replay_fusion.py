"""Qdrant's built-in weighted RRF against the engine's score formula, re-tuned, leave one out.

    .venv/bin/python benchmarks/recall_replay_fusion.py   # writes results/recall_quality_replay_fusion.md

The default fuses each stream with `weight / (rrf_k + rank)` (single-stream RRF prefetches under
a score formula). Qdrant's built-in weighted RRF, `weight / (rank + weight * (k - 1))`, is about
1 ms a recall cheaper at 100k (`engine_cost.py`), but the default weights were chosen for the
formula. This replays the default (all eight streams: short, long, BM25, SPLADE, SPLADE-short,
`dated`, `speaker`, `speaker_bm25`, and `conversation_diversity`) with either fusion and
re-tunes both on the same weight grid, so each family is judged by its own leave-one-out
choice. Qdrant's `k - 1` and a common weight scale are one free constant, `K`: a stream adds
`weight / (rank + K * weight)` up to a constant factor.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_replay as rr
from episodex._episodes.periods import DATED_SLACK
from episodex._episodes.store import (
    DEFAULT_CONVERSATION_DIVERSITY,
    DEFAULT_DATED_WEIGHT,
    DEFAULT_RRF_K,
    DEFAULT_SPEAKER_WEIGHTS,
    DEFAULT_WEIGHTS,
)
from recall_replay_eighth import Lab
from recall_replay_ninth import SPEAKER_STREAMS, Speakers, diversified

Score = Callable[[float, int], float]
GRID = {
    "dense": (0.05, 0.1),
    "bm25": (0.3, 0.45),
    "splade": (0.2, 0.3),
    "splade_short": (0.1, 0.2),
    "dated": (0.3, 0.45),
    "speaker": (0.2, 0.3),
    "speaker_bm25": (0.1, 0.2),
}


class Replay:
    """Each question's stream lists, fused with any weights and score."""

    def __init__(self) -> None:
        self.lab = Lab()
        self.spk = Speakers(self.lab)
        self._lists: dict[tuple[int, int], list[tuple[str, np.ndarray]]] = {}

    def lists(self, ci: int, qi: int) -> list[tuple[str, np.ndarray]]:
        if (ci, qi) not in self._lists:
            out = [(s, self.lab.deep[ci][s][qi][:100]) for s in DEFAULT_WEIGHTS]
            dated = self.lab.dated.dated_ranking(ci, qi, "short", DATED_SLACK.days)
            out.append(("dated", dated[:100]))
            out += [(n, self.spk.ranking(ci, qi, s)) for n, s in SPEAKER_STREAMS.items()]
            self._lists[ci, qi] = out
        return self._lists[ci, qi]

    def run(self, weights: dict[str, float], score: Score) -> rr.Result:
        fused = []
        for ci, d in enumerate(rr.DATA):
            row = []
            for qi in range(len(d["questions"])):
                acc: dict[int, float] = {}
                for name, docs in self.lists(ci, qi):
                    w = weights[name]
                    for pos, doc in enumerate(docs):
                        acc[int(doc)] = acc.get(int(doc), 0.0) + score(w, pos + 1)
                order = sorted(acc, key=lambda x: -acc[x])[:60]
                row.append([(i, acc[i]) for i in order])
            fused.append(row)
        p = DEFAULT_CONVERSATION_DIVERSITY
        return self.lab.evaluate(lambda ci, qi, f: diversified(self.lab, ci, f, p), fused)


def textbook(k: float) -> Score:
    return lambda w, r: w / (k + r)


def qdrant(big_k: float) -> Score:
    return lambda w, r: w / (r + big_k * w)


def held_out(grid: list[tuple[str, rr.Result]]) -> np.ndarray:
    """The mean over the three folds of the held-out figures of each fold's choice."""
    rows = []
    for held in rr.NAMES:
        train = [n for n in rr.NAMES if n != held]
        _, res = max(grid, key=lambda cr: rr.pct(cr[1], train).mean())
        rows.append(rr.pct(res, [held]))
    return np.mean(rows, axis=0)


def main() -> None:
    start = time.perf_counter()
    replay = Replay()
    default_weights = {
        **DEFAULT_WEIGHTS,
        "dated": DEFAULT_DATED_WEIGHT,
        **DEFAULT_SPEAKER_WEIGHTS,
    }
    default = replay.run(default_weights, textbook(DEFAULT_RRF_K))
    parts = [
        "# Qdrant's built-in weighted RRF against the score formula: offline replay",
        "",
        "Written by `benchmarks/recall_replay_fusion.py`. Turn any@5 / turn any@10 / session any@5, "
        f"dev split, 505 questions. The default replayed: {rr.fmt(rr.pct(default))}.",
        "",
        "## The default weights under Qdrant's fusion",
        "",
        "| K | dev split | " + " | ".join(rr.NAMES) + " |",
        "|---|---|" + "---|" * len(rr.NAMES),
    ]
    for big_k in (0, 5, 10, 20, 25, 40, 60, 100, 200):
        res = replay.run(default_weights, qdrant(big_k))
        cells = " | ".join(rr.fmt(rr.pct(res, [n])) for n in rr.NAMES)
        parts.append(f"| {big_k} | {rr.fmt(rr.pct(res))} | {cells} |")
    parts.append("")
    families = {
        "score formula, weight / (k + rank)": ("k", (10, 20, 40), textbook),
        "Qdrant's weighted RRF, weight / (rank + K * weight)": ("K", (15, 25, 40), qdrant),
    }
    summary = []
    for title, (letter, constants, make) in families.items():
        grid: list[tuple[str, rr.Result]] = []
        for c, *values in itertools.product(constants, *GRID.values()):
            w = dict(zip(GRID, values, strict=True))
            weights = {"short": w["dense"], "long": w["dense"], **w}
            label = f"{letter}={c} " + " ".join(f"{n}={v:g}" for n, v in w.items())
            grid.append((label, replay.run(weights, make(c))))
        note = "Dense short and long share one weight; every setting is fused and diversified as the default."
        parts.append(rr.loo_section(title, note, grid, default, top=5))
        best = max(grid, key=lambda cr: rr.pct(cr[1]).mean())
        summary.append((title, rr.fmt(rr.pct(best[1])), rr.fmt(held_out(grid))))
    parts += [
        "## Summary",
        "",
        "| fusion | best on all three | held out, mean of the three folds |",
        "|---|---|---|",
        *(f"| {t} | {b} | {h} |" for t, b, h in summary),
        "",
        f"{time.perf_counter() - start:.0f} s.",
        "",
    ]
    path = rr.RESULTS / "recall_quality_replay_fusion.md"
    path.write_text("\n".join(parts))
    print("\n".join(parts[-8:]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
