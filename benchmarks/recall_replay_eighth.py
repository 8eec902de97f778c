"""Recall ideas on top of the `dated` default, replayed offline, each checked by leaving one out.

    .venv/bin/python benchmarks/recall_replay_eighth.py   # writes results/recall_quality_replay_eighth.md

Uses `recall_replay.py`'s replay of the five streams and `recall_replay_dated.py`'s `dated`
stream: together they reproduce the engine's default (74.7 / 82.8 / 91.5). Every idea here acts
where the library could act (the query, the fusion, the order of the fused hits, a value stored
with each episode), never on how the harness builds the episodes. Six ideas:
- neighbours kept apart: the top 10 picked greedily, a hit's fused score multiplied by
  (1 - p) per hit already picked within r turns of it in the same session;
- neighbours lifted: each hit gains a share of its neighbours' fused scores (max or sum);
- diversity below the top k only (k = 3 or 5): the hits after the first k picked as above, by
  session or by neighbourhood, so the top k stay as fused;
- an informativeness prior stored with each episode: the fused score plus beta times a
  standardised, optionally capped, value of the short summary (its word count or its SPLADE
  vector's term count, both logged), so chit-chat ("Thanks, Mel!") ranks lower;
- BM25 query expansion: the question's BM25 vector plus the SPLADE query's strongest whole-word
  expansion terms that are not in the question, weighted by their SPLADE weight times IDF;
- deeper prefetches: each stream's best 100 (the default) to 1,000, with rrf_k 10, 20 or 40;
- the `dated` weight by how long the named period is (a day, a month or season, a year).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_replay as rr
from episodex._episodes.periods import DATED_SLACK
from episodex._episodes.store import DEFAULT_DATED_WEIGHT, DEFAULT_RRF_K, DEFAULT_WEIGHTS
from recall_replay_dated import Dated

Fused = list[tuple[int, float]]  # (episode, fused score), best first
Pick = Callable[[int, int, Fused], list[int]]
SPLADE_VOCAB = (
    Path(__file__).resolve().parents[1]
    / "packages/episodex-models/src/episodex_models/splade-tiny/tokenizer.json"
)


class Lab:
    """The default's fused lists per question, and each episode's place in its session."""

    def __init__(self) -> None:
        self.dated = Dated(rr.base_scores())
        self.deep = [rr.rankings(s, 1000) for s in self.dated.base]
        self.fused = [
            [self.fuse(ci, qi) for qi in range(len(d["questions"]))] for ci, d in enumerate(rr.DATA)
        ]
        self.place = [
            [(int(x[1:].split(":")[0]), int(x.split(":")[1])) for x in d["dia"]] for d in rr.DATA
        ]
        self.default = self.evaluate(lambda ci, qi, f: [i for i, _ in f])

    def fuse(
        self,
        ci: int,
        qi: int,
        *,
        stage1: int = 100,
        k: int = DEFAULT_RRF_K,
        bm25: np.ndarray | None = None,
        dated_weight: float = DEFAULT_DATED_WEIGHT,
    ) -> Fused:
        lists = [
            (w, bm25 if s == "bm25" and bm25 is not None else self.deep[ci][s][qi][:stage1])
            for s, w in DEFAULT_WEIGHTS.items()
        ]
        dated = self.dated.dated_ranking(ci, qi, "short", DATED_SLACK.days)
        lists.append((dated_weight, dated[:stage1]))
        acc: dict[int, float] = {}
        for w, docs in lists:
            for pos, doc in enumerate(docs):
                acc[int(doc)] = acc.get(int(doc), 0.0) + w / (k + pos + 1)
        order = sorted(acc, key=lambda x: -acc[x])
        return [(i, acc[i]) for i in order[:60]]

    def evaluate(self, pick: Pick, fused: list[list[Fused]] | None = None) -> rr.Result:
        out: rr.Result = {}
        for ci, d in enumerate(rr.DATA):
            hits = np.zeros(3)
            for qi in range(len(d["questions"])):
                top = pick(ci, qi, (fused or self.fused)[ci][qi])[:10]
                hits += rr.targets([d["dia"][i] for i in top], d["evidence"][qi])
            out[d["name"]] = (hits, len(d["questions"]))
        return out

    def near(self, ci: int, a: int, b: int, r: int) -> bool:
        (sa, ta), (sb, tb) = self.place[ci][a], self.place[ci][b]
        return sa == sb and (r < 0 or abs(ta - tb) <= r)  # r < 0: the whole session


def greedy(lab: Lab, p: float, r: int, keep: int = 0) -> Pick:
    """The first `keep` as fused, then greedily: (1 - p) per picked hit near it."""

    def pick(ci: int, qi: int, fused: Fused) -> list[int]:
        chosen = [i for i, _ in fused[:keep]]
        rest = list(fused[keep:])
        while rest and len(chosen) < 10:
            scored = [
                (s * (1 - p) ** sum(lab.near(ci, c, i, r) for c in chosen), j)
                for j, (i, s) in enumerate(rest)
            ]
            chosen.append(rest.pop(max(scored)[1])[0])
        return chosen

    return pick


def lifted(lab: Lab, share: float, r: int, mode: str) -> Pick:
    def pick(ci: int, qi: int, fused: Fused) -> list[int]:
        scores = dict(fused)
        new: dict[int, float] = {}
        for i, s in fused:
            nb = [v for j, v in scores.items() if j != i and lab.near(ci, i, j, r)]
            new[i] = s + share * ((max(nb) if mode == "max" else sum(nb)) if nb else 0.0)
        return sorted(new, key=lambda x: -new[x])

    return pick


def priors() -> dict[str, list[np.ndarray]]:
    raw: dict[str, list[np.ndarray]] = {
        "words": [
            np.array([np.log1p(len(s.split(":", 1)[-1].split())) for s in d["shorts"]])
            for d in rr.DATA
        ],
        "SPLADE terms": [np.array([np.log1p(len(ix)) for ix, _ in d["sp_short"]]) for d in rr.DATA],
    }
    out: dict[str, list[np.ndarray]] = {}
    for name, per in raw.items():
        pooled = np.concatenate(per)  # one fixed scale, as a library constant would be
        out[name] = [(v - pooled.mean()) / pooled.std() for v in per]
    return out


def with_prior(values: list[np.ndarray], beta: float, cap: float) -> Pick:
    def pick(ci: int, qi: int, fused: Fused) -> list[int]:
        new = {i: s + beta * min(float(values[ci][i]), cap) for i, s in fused}
        return sorted(new, key=lambda x: -new[x])

    return pick


class Expansion:
    """BM25 rankings with the SPLADE query's whole-word expansion terms added."""

    def __init__(self) -> None:
        vocab: dict[str, int] = json.loads(SPLADE_VOCAB.read_text())["model"]["vocab"]
        self.words = {v: k for k, v in vocab.items()}
        self.model = qe.Bm25(qe.Bm25Config(k=1.2, b=0.75, avg_len=64.0, language="english"))  # type: ignore[arg-type]
        self.postings: list[dict[int, list[tuple[int, float]]]] = []
        self.df: dict[int, int] = {}
        for d in rr.DATA:
            post: dict[int, list[tuple[int, float]]] = {}
            for j, text in enumerate(d["joined"]):
                idx, val = self.vec(self.model.embed_document(text))
                for t, x in zip(idx.tolist(), val.tolist(), strict=True):
                    post.setdefault(t, []).append((j, x))
            for t in post:
                self.df[t] = self.df.get(t, 0) + len(post[t])
            self.postings.append(post)

    @staticmethod
    def vec(v: Any) -> tuple[np.ndarray, np.ndarray]:
        return np.array(list(v.indices), dtype=int), np.array(list(v.values))

    def idf(self, t: int) -> float:
        n = self.df.get(t, 0)
        return float(np.log((rr.N_ALL - n + 0.5) / (n + 0.5) + 1.0))

    def ranking(self, ci: int, qi: int, beta: float, terms: int) -> np.ndarray:
        d = rr.DATA[ci]
        question = d["questions"][qi]
        idx, val = self.vec(self.model.embed_query(question))
        query = {int(t): float(v) * self.idf(int(t)) for t, v in zip(idx, val, strict=True)}
        sp_idx, sp_val = d["sp_q"][qi]
        added = 0
        for o in np.argsort(-sp_val):
            if added >= terms or beta <= 0:
                break
            word = self.words.get(int(sp_idx[o]), "")
            if len(word) < 3 or not word.isalpha() or word in question.lower():
                continue
            extra, _ = self.vec(self.model.embed_query(word))
            for t in extra.tolist():
                query.setdefault(t, beta * float(sp_val[o] / sp_val.max()) * self.idf(t))
            added += bool(len(extra))
        scores = np.zeros(len(d["dia"]))
        for t, w in query.items():
            for j, x in self.postings[ci].get(t, ()):
                scores[j] += x * w
        order = np.argsort(-scores, kind="stable")
        return order[scores[order] > 0][:100]


def main() -> None:
    start = time.perf_counter()
    lab = Lab()
    default = lab.default
    keep_all: Pick = lambda ci, qi, f: [i for i, _ in f]  # noqa: E731
    parts = [
        "# Recall ideas on top of the `dated` default: offline replay, leave one out",
        "",
        "Written by `benchmarks/recall_replay_eighth.py`. Turn any@5 / turn any@10 / session "
        f"any@5, dev split, 505 questions. The default replayed: {rr.fmt(rr.pct(default))}. "
        "Each grid includes the default (the idea switched off), so a fold may pick it.",
        "",
    ]

    def section(title: str, note: str, grid: list[tuple[str, rr.Result]]) -> None:
        grid = [("off (the default)", default), *grid]
        parts.append(rr.loo_section(title, note, grid, default, top=5))

    section(
        "Neighbours kept apart",
        "Greedy top 10: (1 - p) per picked hit within r turns (r = -1: the same session).",
        [
            (f"p {p:g}, r {r}", lab.evaluate(greedy(lab, p, r)))
            for p, r in itertools.product((0.05, 0.1, 0.2, 0.3, 0.5), (1, 2, 3))
        ],
    )
    section(
        "Neighbours lifted",
        "Each hit gains a share of its neighbours' fused scores within r turns.",
        [
            (f"share {a:g}, r {r}, {m}", lab.evaluate(lifted(lab, a, r, m)))
            for a, r, m in itertools.product((0.05, 0.1, 0.2, 0.3), (1, 2), ("max", "sum"))
        ],
    )
    section(
        "Diversity below the top k",
        "The first k as fused; then (1 - p) per picked hit of the same session (r = -1) or "
        "within r turns.",
        [
            (f"k {keep}, p {p:g}, r {r}", lab.evaluate(greedy(lab, p, r, keep)))
            for p, r, keep in itertools.product((0.05, 0.1, 0.2, 0.3, 0.5), (-1, 1, 2, 4), (3, 5))
        ],
    )
    section(
        "An informativeness prior",
        "Fused score + beta x min(standardised value, cap); values of the short summary.",
        [
            (f"{name}, beta {b:g}, cap {c:g}", lab.evaluate(with_prior(v, b, c)))
            for (name, v), b, c in itertools.product(
                priors().items(), (0.0005, 0.001, 0.002, 0.003, 0.005), (0.0, 1.0, 99.0)
            )
        ],
    )
    expansion = Expansion()
    grid: list[tuple[str, rr.Result]] = []
    for beta, terms in itertools.product((0.1, 0.2, 0.3, 0.5, 1.0), (3, 5, 10, 20)):
        fused = [
            [
                lab.fuse(ci, qi, bm25=expansion.ranking(ci, qi, beta, terms))
                for qi in range(len(d["questions"]))
            ]
            for ci, d in enumerate(rr.DATA)
        ]
        grid.append((f"beta {beta:g}, {terms} terms", lab.evaluate(keep_all, fused)))
    section(
        "BM25 query expansion with SPLADE's terms",
        "The SPLADE query's strongest whole words not in the question, added to the BM25 query.",
        grid,
    )
    grid = []
    for stage1, k in itertools.product((150, 200, 300, 500, 1000), (10, 20, 40)):
        fused = [
            [lab.fuse(ci, qi, stage1=stage1, k=k) for qi in range(len(d["questions"]))]
            for ci, d in enumerate(rr.DATA)
        ]
        grid.append((f"stage1 {stage1}, k {k}", lab.evaluate(keep_all, fused)))
    section(
        "Deeper prefetches",
        "Each stream's best stage1 (the default 100) and rrf_k.",
        grid,
    )
    grid = []
    periods = lab.dated.periods
    for day, month, year in itertools.product(
        (0.1, 0.3, 0.5, 1.0), (0.1, 0.3, 0.5, 1.0), (0.0, 0.1, 0.3, 0.5)
    ):

        def weight(
            ci: int, qi: int, day: float = day, month: float = month, year: float = year
        ) -> float:
            period = periods[ci][qi]
            if period is None:
                return 0.0
            days = (period[1] - period[0]).days
            return day if days <= 1 else month if days <= 92 else year

        fused = [
            [lab.fuse(ci, qi, dated_weight=weight(ci, qi)) for qi in range(len(d["questions"]))]
            for ci, d in enumerate(rr.DATA)
        ]
        grid.append(
            (
                f"day {day:g}, month or season {month:g}, year {year:g}",
                lab.evaluate(keep_all, fused),
            )
        )
    section(
        "The dated weight by the period's length",
        "A day (25 dev questions), a month or a season (32), a year (3); the default is 0.3 for all.",
        grid,
    )
    parts.append(f"Run time {time.perf_counter() - start:.0f} s.")
    path = rr.RESULTS / "recall_quality_replay_eighth.md"
    path.write_text("\n".join(parts) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
