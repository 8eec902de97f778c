"""Recall ideas on LoCoMo's dev split, replayed offline, each checked by leaving one conversation out.

    .venv/bin/python benchmarks/recall_replay.py      # writes results/recall_quality_replay.md

`recall_quality.py` asks the engine; this script replays the same five-stream recall in numpy so
a grid of hundreds of settings runs in minutes on a shared machine: the dense streams by cosine
over the harness's cached MiniLM vectors, BM25 with Qdrant Edge's own tokenizer and Qdrant's
IDF (`ln((N - n + 0.5) / (n + 0.5) + 1)` over the whole collection), the two SPLADE streams by
dot product, each stream's `stage1` best among the conversation's episodes (sparse streams:
score > 0), fused by weighted RRF `weight / (k + position + 1)` as the engine does. The first
table checks the replay against the engine's figures for the default.

Same ingestion recipe as the harness's default (window 1,1, session date in the long summary).
For each idea: every setting of its grid is scored per conversation; for each conversation held
out, the setting with the best mean of the three targets (turn any@5, any@10, session any@5) on
the other two is scored on it, next to the library default on it. An idea is kept only if it
gains held out on at least two of three folds with no big loss on the third.
"""

from __future__ import annotations

import itertools
import pickle
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CACHE, RESULTS, DiskVectorCache, load_locomo, md_table
from episodex import default_embedder
from episodex._embedders.splade import default_splade
from episodex._episodes.store import DEFAULT_RRF_K, DEFAULT_WEIGHTS
from recall_quality import CATEGORIES, Recipe

STREAMS = ("short", "long", "bm25", "splade", "splade_short")
#: The previous release's weights, fused by Qdrant's built-in weighted RRF.
PREVIOUS_WEIGHTS = {"short": 0.1, "long": 0.1, "bm25": 0.2, "splade": 0.3, "splade_short": 0.3}
RAW = CACHE / "replay-raw.pkl"
Sparse = tuple[np.ndarray, np.ndarray]
Scores = dict[str, np.ndarray]  # stream -> questions x episodes
Result = dict[str, tuple[np.ndarray, int]]  # conversation -> (hits of the 3 targets, questions)


# -- inputs: texts, cached dense vectors, SPLADE vectors (encoded once, kept on disk) -------


def build_raw() -> list[dict[str, Any]]:
    if RAW.exists():
        return pickle.loads(RAW.read_bytes())
    recipe = Recipe()
    real = default_embedder()
    docs = DiskVectorCache(real.model_id, CACHE)
    queries = DiskVectorCache(f"query-{real.model_id}", CACHE)
    splade = default_splade()

    def sp(texts: Sequence[str]) -> list[Sparse]:
        return [(np.array(v.indices), np.array(v.values)) for v in splade.documents(texts)]

    data: list[dict[str, Any]] = []
    for conv in load_locomo():
        pairs = [recipe.summaries(conv.turns, i) for i in range(len(conv.turns))]
        shorts, longs = [s for s, _ in pairs], [lg for _, lg in pairs]
        qs = [q for q in conv.questions if q.category in CATEGORIES and q.evidence]
        texts = [q.question for q in qs]
        dtab, qtab = docs.table(shorts + longs), queries.table(texts)  # the harness fills them
        data.append(
            {
                "name": conv.name,
                "dia": [t.dia_id for t in conv.turns],
                "shorts": shorts,
                "longs": longs,
                "joined": [f"{s}\n{lg}" for s, lg in pairs],
                "questions": texts,
                "cats": [q.category for q in qs],
                "evidence": [q.evidence for q in qs],
                "dshort": np.stack([dtab[s] for s in shorts]),
                "dlong": np.stack([dtab[lg] for lg in longs]),
                "qdense": np.stack([qtab[t] for t in texts]),
                "sp_joined": sp([f"{s}\n{lg}" for s, lg in pairs]),
                "sp_short": sp(shorts),
                "sp_q": sp(texts),
            }
        )
    RAW.write_bytes(pickle.dumps(data))
    return data


DATA = build_raw()
NAMES = [d["name"] for d in DATA]
N_ALL = sum(len(d["dia"]) for d in DATA)


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def sparse_scores(docs: Sequence[Sparse], queries: Sequence[Sparse]) -> np.ndarray:
    vocab: dict[int, int] = {}
    for idx, _ in [*docs, *queries]:
        for t in idx:
            vocab.setdefault(int(t), len(vocab))

    def matrix(vecs: Sequence[Sparse]) -> np.ndarray:
        m = np.zeros((len(vecs), len(vocab)), dtype=np.float32)
        for i, (idx, val) in enumerate(vecs):
            for t, v in zip(idx, val, strict=True):
                m[i, vocab[int(t)]] += v
        return m

    return matrix(queries) @ matrix(docs).T


def bm25_scores(
    k: float = 1.2,
    b: float = 0.75,
    avg_len: float = 64.0,
    doc: Callable[[str, str], str] | None = None,
) -> list[np.ndarray]:
    model = qe.Bm25(qe.Bm25Config(k=k, b=b, avg_len=avg_len, language="english"))  # type: ignore[arg-type]

    def vec(v: Any) -> Sparse:
        return np.array(list(v.indices)), np.array(list(v.values))

    per: list[tuple[list[Sparse], list[Sparse]]] = []
    for d in DATA:
        texts = (
            [doc(s, lg) for s, lg in zip(d["shorts"], d["longs"], strict=True)]
            if doc
            else d["joined"]
        )
        per.append(
            (
                [vec(model.embed_document(t)) for t in texts],
                [vec(model.embed_query(q)) for q in d["questions"]],
            )
        )
    df: dict[int, int] = {}
    for dv, _ in per:
        for idx, _ in dv:
            for t in {int(x) for x in idx}:
                df[t] = df.get(t, 0) + 1
    out: list[np.ndarray] = []
    for dv, qv in per:
        weighted: list[Sparse] = []
        for idx, val in qv:
            n = np.array([df.get(int(t), 0) for t in idx], dtype=float)
            weighted.append((idx, val * np.log((N_ALL - n + 0.5) / (n + 0.5) + 1.0)))
        out.append(sparse_scores(dv, weighted))
    return out


def base_scores() -> list[Scores]:
    out: list[Scores] = []
    for d, bm in zip(DATA, bm25_scores(), strict=True):
        q = unit(d["qdense"])
        out.append(
            {
                "short": q @ unit(d["dshort"]).T,
                "long": q @ unit(d["dlong"]).T,
                "bm25": bm,
                "splade": sparse_scores(d["sp_joined"], d["sp_q"]),
                "splade_short": sparse_scores(d["sp_short"], d["sp_q"]),
            }
        )
    return out


# -- fusion and scoring ---------------------------------------------------------------------


def rankings(scores: Scores, stage1: int | dict[str, int]) -> dict[str, list[np.ndarray]]:
    out: dict[str, list[np.ndarray]] = {}
    for s, m in scores.items():
        limit = stage1 if isinstance(stage1, int) else stage1[s]
        order = np.argsort(-m, axis=1, kind="stable")
        rows: list[np.ndarray] = []
        for qi in range(m.shape[0]):
            o = order[qi]
            if s not in ("short", "long"):
                o = o[m[qi, o] > 0]  # a sparse search finds only overlapping documents
            rows.append(o[:limit])
        out[s] = rows
    return out


def rrf_qdrant(
    ranks: dict[str, list[np.ndarray]], weights: dict[str, float], k: int, qi: int
) -> list[int]:
    """Qdrant's built-in weighted RRF, `1 / (rank / weight + k - 1)`: the engine's before 0.4.

    That is `weight / (rank + weight * (k - 1))`: a stream's weight also shrinks its own k.
    """
    acc: dict[int, float] = {}
    for s, w in weights.items():
        if w > 0:
            for pos, doc in enumerate(ranks[s][qi]):
                acc[int(doc)] = acc.get(int(doc), 0.0) + 1.0 / ((pos + 1) / w + k - 1)
    return sorted(acc, key=lambda x: -acc[x])[:10]


def rrf(
    ranks: dict[str, list[np.ndarray]], weights: dict[str, float], k: int, qi: int
) -> list[int]:
    """Textbook weighted RRF, `weight / (k + rank)`, one k for every stream: the engine's."""
    acc: dict[int, float] = {}
    for s, w in weights.items():
        if w > 0:
            for pos, doc in enumerate(ranks[s][qi]):
                acc[int(doc)] = acc.get(int(doc), 0.0) + w / (k + pos + 1)
    return sorted(acc, key=lambda x: -acc[x])[:10]


def score_fusion(
    scores: Scores,
    ranks: dict[str, list[np.ndarray]],
    weights: dict[str, float],
    mode: str,
    qi: int,
) -> list[int]:
    """Weighted score fusion: DBSF (mean +- 3 sd to [0, 1]) or min-max per stream."""
    acc: dict[int, float] = {}
    for s, w in weights.items():
        docs = ranks[s][qi]
        if w <= 0 or len(docs) == 0:
            continue
        v = scores[s][qi, docs]
        if mode == "dbsf":
            sd = float(v.std()) or 1.0
            n = np.clip((v - (v.mean() - 3 * sd)) / (6 * sd), 0, 1)
        else:
            n = (v - v.min()) / (float(v.max() - v.min()) or 1.0)
        for doc, x in zip(docs, n, strict=True):
            acc[int(doc)] = acc.get(int(doc), 0.0) + w * float(x)
    return sorted(acc, key=lambda x: -acc[x])[:10]


def targets(ranked: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
    ev = set(evidence)
    sessions = {e.split(":")[0] for e in ev}
    top5 = {r.split(":")[0] for r in ranked[:5]}
    return np.array(
        [bool(ev & set(ranked[:5])), bool(ev & set(ranked[:10])), bool(sessions & top5)],
        dtype=float,
    )


def evaluate(
    scores: list[Scores],
    weights: dict[str, float] = DEFAULT_WEIGHTS,
    k: int = DEFAULT_RRF_K,
    stage1: int | dict[str, int] = 100,
    fusion: str = "rrf",
) -> Result:
    out: Result = {}
    for d, sc in zip(DATA, scores, strict=True):
        ranks = rankings(sc, stage1)
        tot = np.zeros(3)
        for qi in range(len(d["questions"])):
            if fusion == "rrf":
                top = rrf(ranks, weights, k, qi)
            elif fusion == "rrf_qdrant":
                top = rrf_qdrant(ranks, weights, k, qi)
            else:
                top = score_fusion(sc, ranks, weights, fusion, qi)
            tot += targets([d["dia"][i] for i in top], d["evidence"][qi])
        out[d["name"]] = (tot, len(d["questions"]))
    return out


def pct(res: Result, convs: Iterable[str] | None = None) -> np.ndarray:
    names = set(NAMES if convs is None else convs)
    return (
        100
        * sum(v for n, (v, _) in res.items() if n in names)
        / sum(c for n, (_, c) in res.items() if n in names)
    )


def fmt(p: np.ndarray) -> str:
    return "/".join(f"{x:.1f}" for x in p)


def loo_section(
    title: str, note: str, grid: list[tuple[str, Result]], default: Result, top: int = 5
) -> str:
    best = sorted(grid, key=lambda cr: -pct(cr[1]).mean())[:top]
    rows: list[list[Any]] = []
    for held in NAMES:
        train = [n for n in NAMES if n != held]
        label, res = max(grid, key=lambda cr: pct(cr[1], train).mean())
        h, b = pct(res, [held]), pct(default, [held])
        rows.append([held, label, fmt(h), fmt(b), f"{h.mean() - b.mean():+.2f}"])
    parts = [
        f"## {title}",
        "",
        note,
        "",
        f"{len(grid)} settings. Best {top} on all three conversations (any@5/any@10/session any@5):",
        "",
        md_table(
            ["setting", "all", *NAMES],
            [[lb, fmt(pct(r)), *(fmt(pct(r, [n])) for n in NAMES)] for lb, r in best],
        ),
        "",
        "Leave one conversation out (chosen on the other two by the mean of the three targets):",
        "",
        md_table(["held out", "chosen", "held out", "default, held out", "mean Δ"], rows),
        "",
    ]
    print("\n".join(parts), flush=True)
    return "\n".join(parts)


def misses(base: list[Scores]) -> str:
    """Where the evidence of the default's any@10 misses sits in each stream alone."""
    found = {"top 10": 0, "top 30": 0, "top 100": 0, "none": 0}
    best = dict.fromkeys(STREAMS, 0)
    total = 0
    for d, sc in zip(DATA, base, strict=True):
        ranks = rankings(sc, 100)
        for qi in range(len(d["questions"])):
            ev = set(d["evidence"][qi])
            if ev & {d["dia"][i] for i in rrf(ranks, DEFAULT_WEIGHTS, DEFAULT_RRF_K, qi)}:
                continue
            total += 1
            pos = {
                s: min([p for p, i in enumerate(ranks[s][qi]) if d["dia"][i] in ev] or [999])
                for s in STREAMS
            }
            first = min(pos.values())
            bucket = "top 10" if first < 10 else "top 30" if first < 30 else "top 100"
            found["none" if first >= 100 else bucket] += 1
            if first < 10:
                for s in STREAMS:
                    best[s] += pos[s] == first
    text = (
        f"## Where the default's any@10 misses are\n\n{total} questions miss; the evidence's best "
        f"rank in any single stream: {found}. Streams holding that best rank (top 10): {best}.\n"
    )
    print(text, flush=True)
    return text


# -- the ideas ------------------------------------------------------------------------------

_WH = re.compile(
    r"^(?:(?:when|what|how|why|where|who|whom|which|whose)"
    r"(?:\s+(?:kind|kinds|type|types|sort)\s+of\s+\w+|\s+(?:many|much|long|often)(?:\s+\w+)?|\s+\w+)??\s+)?"
    r"(?:did|does|do|is|are|was|were|has|have|had|will|would|could|can|might)\s+",
    re.IGNORECASE,
)


def statement(question: str) -> str:
    """`When did Caroline go to the group?` -> `Caroline go to the group`."""
    return _WH.sub("", question.strip()).rstrip("?").strip() or question


def main() -> None:
    base = base_scores()
    default = evaluate(base)
    previous = evaluate(base, PREVIOUS_WEIGHTS, k=20, fusion="rrf_qdrant")
    out = [
        "# Recall ideas: offline replay with leave-one-conversation-out",
        "",
        "Written by `benchmarks/recall_replay.py` (see its docstring for the replay). Figures are "
        "turn any@5 / turn any@10 / session any@5, dev split, 505 questions, recipe window 1,1 + "
        "date in long.",
        "",
        f"Replay of the library default ({DEFAULT_WEIGHTS}, rrf_k {DEFAULT_RRF_K}, stage1 100): "
        f"**{fmt(pct(default))}**; per conversation "
        + ", ".join(f"{n} {fmt(pct(default, [n]))}" for n in NAMES)
        + " (the engine, `recall_quality.py`: 73.5/81.8/91.5).",
        "",
        f"The previous release ({PREVIOUS_WEIGHTS}, rrf_k 20, Qdrant's built-in weighted RRF): "
        f"**{fmt(pct(previous))}**; per conversation "
        + ", ".join(f"{n} {fmt(pct(previous, [n]))}" for n in NAMES)
        + " (the engine: 72.3/81.4/90.1).",
        "",
    ]
    lengths = []
    counts = qe.Bm25(qe.Bm25Config(k=1.2, b=0.0, avg_len=64.0, language="english"))  # type: ignore[arg-type]
    for d in DATA:
        for t in d["joined"]:
            w = np.array(list(counts.embed_document(t).values))
            lengths.append(float((1.2 * w / (2.2 - w)).sum()))  # b = 0: invert the saturation
    grid: list[tuple[str, Result]] = []
    for k, b, avg in itertools.product(
        (0.6, 0.9, 1.2, 1.6, 2.0), (0.25, 0.5, 0.75, 0.9), (32.0, 64.0, 128.0)
    ):
        sc = [s | {"bm25": m} for s, m in zip(base, bm25_scores(k, b, avg), strict=True)]
        grid.append((f"k={k:g} b={b:g} avg_len={avg:g}", evaluate(sc)))
    out.append(
        loo_section(
            "BM25 k, b, avg_len",
            f"The indexed text (short + long joined) has {np.mean(lengths):.1f} tokens on average "
            f"(median {np.median(lengths):.0f}, p10 {np.percentile(lengths, 10):.0f}, p90 "
            f"{np.percentile(lengths, 90):.0f}) after stemming and stopwords, against avg_len 64.",
            grid,
            default,
        )
    )
    grid = []
    for sd, sb, ss, sss, k in itertools.product(
        (10, 30, 100), (10, 30, 100), (10, 30, 100), (10, 30, 100), (5, 10, 20, 40)
    ):
        st = {"short": sd, "long": sd, "bm25": sb, "splade": ss, "splade_short": sss}
        grid.append((f"stage1 {sd}/{sd}/{sb}/{ss}/{sss}, k={k}", evaluate(base, k=k, stage1=st)))
    out.append(
        loo_section(
            "stage1 per stream with rrf_k",
            "stage1 of short/long/bm25/splade/splade_short, rrf_k 5, 10, 20 or 40.",
            grid,
            default,
        )
    )
    grid = [(f"stage1 100, k={k}", evaluate(base, k=k)) for k in (5, 10, 15, 20, 30, 40, 60)]
    out.append(loo_section("rrf_k alone (stage1 100)", "rrf_k 5 to 60.", grid, default, top=7))
    grid = []
    for p, top, dp in itertools.product((0.0, 0.5, 1.0, 1.5), (None, 32, 16, 8), (1.0, 0.5)):
        sc: list[Scores] = []
        for d, s in zip(DATA, base, strict=True):
            q: list[Sparse] = []
            for idx, val in d["sp_q"]:
                if top is not None and len(val) > top:
                    keep = np.argsort(-val)[:top]
                    idx, val = idx[keep], val[keep]
                q.append((idx, val**p))
            joined = [(i, v**dp) for i, v in d["sp_joined"]]
            short = [(i, v**dp) for i, v in d["sp_short"]]
            sc.append(
                s | {"splade": sparse_scores(joined, q), "splade_short": sparse_scores(short, q)}
            )
        grid.append((f"query w^{p:g}, top {top or 'all'}, doc w^{dp:g}", evaluate(sc)))
    nnz = [len(v) for d in DATA for _, v in d["sp_q"]]
    out.append(
        loo_section(
            "SPLADE query vector: weight power, strongest terms kept (and document weight power)",
            f"Query vectors have {np.median(nnz):.0f} non-zero terms at the median. Power 0 makes "
            "the query binary; a document power other than 1 would change stored vectors (reindex).",
            grid,
            default,
        )
    )
    real = default_embedder()
    qcache = DiskVectorCache(f"query-{real.model_id}", CACHE)
    statements = sorted({statement(q) for d in DATA for q in d["questions"]})

    class _AsQuery:
        def embed_documents(self, batch: Sequence[str]) -> np.ndarray:
            return np.stack([real.embed_query(t) for t in batch])

    qcache.fill(_AsQuery(), statements, batch=64)  # type: ignore[arg-type]
    grid = [("question only (default)", default)]
    for mix, where in itertools.product((0.3, 0.5, 0.7, 1.0), ("both", "short", "long")):
        sc = []
        for d, s in zip(DATA, base, strict=True):
            texts = [statement(q) for q in d["questions"]]
            tab = qcache.table(texts)
            qv = unit(unit(d["qdense"]) * (1 - mix) + unit(np.stack([tab[t] for t in texts])) * mix)
            new = dict(s)
            for name, docs in (("short", d["dshort"]), ("long", d["dlong"])):
                if where in ("both", name):
                    new[name] = qv @ unit(docs).T
            sc.append(new)
        grid.append((f"statement share {mix:g} ({where} stream)", evaluate(sc)))
    out.append(
        loo_section(
            "Dense query: the question also as a statement",
            "The dense query vector is the normalised mix of the question's and its statement's "
            "(wh-word and auxiliary removed, e.g. `When did Caroline go to the group?` -> "
            "`Caroline go to the group`), for one or both dense streams.",
            grid,
            default,
        )
    )
    grid = [("joined (default)", default)]
    for label, fn in (
        ("long only", lambda s, lg: lg),
        ("short twice + long", lambda s, lg: f"{s}\n{s}\n{lg}"),
        ("short only", lambda s, lg: s),
    ):
        sc = [s | {"bm25": m} for s, m in zip(base, bm25_scores(doc=fn), strict=True)]
        grid.append((f"BM25 over {label}", evaluate(sc)))
    out.append(
        loo_section(
            "BM25 document text",
            "What the BM25 vector indexes (write path).",
            grid,
            default,
        )
    )
    grid = []
    for mode in ("dbsf", "minmax"):
        for wd, wb, ws, wss in itertools.product(
            (0.05, 0.1, 0.2), (0.1, 0.2, 0.3), (0.2, 0.3, 0.4), (0.2, 0.3, 0.4)
        ):
            w = {"short": wd, "long": wd, "bm25": wb, "splade": ws, "splade_short": wss}
            grid.append(
                (f"{mode} {wd:g}/{wd:g}/{wb:g}/{ws:g}/{wss:g}", evaluate(base, w, fusion=mode))
            )
    out.append(
        loo_section(
            "Score fusion instead of RRF",
            "Weighted sum of per-stream normalised scores over each stream's top 100 "
            "(DBSF: mean +- 3 sd mapped to [0, 1]; or min-max). An engine change (the fused "
            "request), measured only.",
            grid,
            default,
        )
    )
    grid = []
    for wd, wb, ws, wss, k in itertools.product(
        (0.0, 0.025, 0.05, 0.1),
        (0.2, 0.3, 0.4, 0.5),
        (0.1, 0.2, 0.3),
        (0.1, 0.2, 0.3),
        (10, 20, 40, 60),
    ):
        w = {"short": wd, "long": wd, "bm25": wb, "splade": ws, "splade_short": wss}
        grid.append((f"{wd:g}/{wd:g}/{wb:g}/{ws:g}/{wss:g}, k={k}", evaluate(base, w, k=k)))
    out.append(
        loo_section(
            "Weights and k of the weighted RRF, weight / (k + rank)",
            "The engine's fusion since Qdrant's built-in weighted RRF (`1 / (rank / weight + k - "
            "1)`, the previous release's, which also shrinks a low-weight stream's k) was "
            "replaced by single-stream RRF prefetches and a score formula. The defaults are this "
            "grid's choice; the previous release's fusion and weights are the baseline above.",
            grid,
            previous,
        )
    )
    out.append(misses(base))
    path = RESULTS / "recall_quality_replay.md"
    path.write_text("\n".join(out))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
