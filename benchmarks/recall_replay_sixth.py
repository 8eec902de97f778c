"""Sixth-pass recall ideas, replayed offline and checked by leaving one conversation out.

    .venv/bin/python benchmarks/recall_replay_sixth.py   # writes results/recall_quality_replay_sixth.md

Uses `recall_replay.py`'s replay of the five-stream recall (see its docstring). Three ideas:
- a sixth stream next to the five: BM25 over the short summary alone, BM25 over the long
  summary alone, or SPLADE over the long summary alone (SPLADE-short's gain came from such a
  split), with the five weights re-gridded around the default and k 20 or 40;
- SPLADE document vectors pruned to their strongest terms (fewer postings, a faster engine);
- confidence-weighted fusion: each stream's weight scaled, per question, by how far its best
  hit stands out (z-score of the top hit in its top 100, or the relative gap to its 10th or
  2nd hit), to a power.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_replay as rr
from _common import RESULTS
from episodex._embedders.splade import default_splade
from episodex._episodes.store import DEFAULT_RRF_K, DEFAULT_WEIGHTS


def sixth_streams(base: list[rr.Scores], default: rr.Result) -> list[str]:
    splade = default_splade()

    def vectors(texts: Sequence[str]) -> list[rr.Sparse]:
        return [(np.array(v.indices), np.array(v.values)) for v in splade.documents(texts)]

    extras = {
        "bm25_short": rr.bm25_scores(doc=lambda s, lg: s),
        "bm25_long": rr.bm25_scores(doc=lambda s, lg: lg),
        "splade_long": [rr.sparse_scores(vectors(d["longs"]), d["sp_q"]) for d in rr.DATA],
    }
    out: list[str] = []
    for name, mats in extras.items():
        scores = [s | {name: m} for s, m in zip(base, mats, strict=True)]
        alone = rr.evaluate(scores, {name: 1.0})
        grid: list[tuple[str, rr.Result]] = []
        for wd, wb, ws, wss, we, k in itertools.product(
            (0.025, 0.05),
            (0.2, 0.3),
            (0.1, 0.2, 0.3),
            (0.1, 0.2, 0.3),
            (0.0, 0.05, 0.1, 0.2, 0.3),
            (20, 40),
        ):
            w = {"short": wd, "long": wd, "bm25": wb, "splade": ws, "splade_short": wss, name: we}
            label = f"{wd:g}/{wd:g}/{wb:g}/{ws:g}/{wss:g} + {name} {we:g}, k={k}"
            grid.append((label, rr.evaluate(scores, w, k=k)))
        note = f"{name} alone: {rr.fmt(rr.pct(alone))}."
        out.append(rr.loo_section(f"A sixth stream: {name}", note, grid, default))
    return out


def _prune(vecs: Sequence[rr.Sparse], top: int | None) -> list[rr.Sparse]:
    out: list[rr.Sparse] = []
    for idx, val in vecs:
        if top is not None and len(val) > top:
            keep = np.argsort(-val)[:top]
            idx, val = idx[keep], val[keep]
        out.append((idx, val))
    return out


def pruned_documents(base: list[rr.Scores], default: rr.Result) -> str:
    joined = [len(v) for d in rr.DATA for _, v in d["sp_joined"]]
    short = [len(v) for d in rr.DATA for _, v in d["sp_short"]]
    grid: list[tuple[str, rr.Result]] = []
    for tj, ts in itertools.product((None, 128, 96, 64, 48), (None, 64, 48, 32)):
        scores = [
            s
            | {
                "splade": rr.sparse_scores(_prune(d["sp_joined"], tj), d["sp_q"]),
                "splade_short": rr.sparse_scores(_prune(d["sp_short"], ts), d["sp_q"]),
            }
            for d, s in zip(rr.DATA, base, strict=True)
        ]
        grid.append((f"joined top {tj or 'all'}, short top {ts or 'all'}", rr.evaluate(scores)))
    note = (
        f"Stored SPLADE vectors have {np.median(joined):.0f} non-zero terms at the median over "
        f"the joined text (p90 {np.percentile(joined, 90):.0f}) and {np.median(short):.0f} over "
        f"the short summary (p90 {np.percentile(short, 90):.0f})."
    )
    return rr.loo_section(
        "SPLADE documents pruned to their strongest terms", note, grid, default, top=8
    )


def _confidence(values: np.ndarray, measure: str) -> float:
    if len(values) < 2:
        return 0.0
    if measure == "z":
        return max(float((values[0] - values.mean()) / (values.std() or 1.0)), 0.0)
    other = values[min(9, len(values) - 1)] if measure == "gap10" else values[1]
    return float((values[0] - other) / (abs(values[0]) or 1.0))


def confidence_weighted(base: list[rr.Scores], default: rr.Result) -> str:
    def evaluate(measure: str, power: float) -> rr.Result:
        out: rr.Result = {}
        for d, sc in zip(rr.DATA, base, strict=True):
            ranks = rr.rankings(sc, 100)
            tot = np.zeros(3)
            for qi in range(len(d["questions"])):
                conf = {s: _confidence(sc[s][qi][ranks[s][qi]], measure) for s in DEFAULT_WEIGHTS}
                mean = float(np.mean(list(conf.values()))) or 1.0
                w = {
                    s: DEFAULT_WEIGHTS[s] * ((c / mean) ** power if c > 0 else 0.0)
                    for s, c in conf.items()
                }
                top = rr.rrf(ranks, w, DEFAULT_RRF_K, qi)
                tot += rr.targets([d["dia"][i] for i in top], d["evidence"][qi])
            out[d["name"]] = (tot, len(d["questions"]))
        return out

    grid: list[tuple[str, rr.Result]] = [("default", default)]
    for measure, power in itertools.product(("z", "gap10", "gap1"), (0.25, 0.5, 1.0, 2.0)):
        grid.append((f"{measure} ^{power:g}", evaluate(measure, power)))
    note = (
        "Each stream's weight times (its confidence / the mean confidence of the five) ^ power, "
        "per question; a fused request would need the streams' scores first (a second engine "
        "round)."
    )
    return rr.loo_section("Confidence-weighted fusion", note, grid, default)


def main() -> None:
    start = time.perf_counter()
    base = rr.base_scores()
    default = rr.evaluate(base)
    parts = [
        "# Recall ideas, sixth pass: offline replay with leave-one-conversation-out",
        "",
        "Written by `benchmarks/recall_replay_sixth.py`. Figures are turn any@5 / turn any@10 / "
        f"session any@5, dev split, 505 questions. Replay of the default: {rr.fmt(rr.pct(default))}.",
        "",
        *sixth_streams(base, default),
        pruned_documents(base, default),
        confidence_weighted(base, default),
        f"Run time {time.perf_counter() - start:.0f} s.",
    ]
    path = RESULTS / "recall_quality_replay_sixth.md"
    path.write_text("\n".join(parts) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
