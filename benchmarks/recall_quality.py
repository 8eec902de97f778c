"""Recall quality on the LoCoMo development split: each stream alone, and fused.

    .venv/bin/python benchmarks/recall_quality.py             # the three modes, default recipe
    .venv/bin/python benchmarks/recall_quality.py --explore   # + weights, rrf_k, recipes, and
                                                              # the leave-one-conversation-out check
    .venv/bin/python benchmarks/recall_quality.py --explore --ideas   # + re-rank/query ideas
    .venv/bin/python benchmarks/recall_quality.py --short-weight 0.2 --long-weight 0.3 \\
        --bm25-weight 0.5 --splade-weight 0 --splade-short-weight 0 --rrf-k 10 --stage1 100 \\
        --window 1,1 --date long

Every turn of a conversation is memorized as one episode of that conversation's user
(user_id = the conversation, conversation_id = its session), each question is recalled with
that user only, and the recalled episodes' `dia_id`s are compared with the question's evidence.
No LLM anywhere. Writes `benchmarks/results/recall_quality.md`, `.json` and PNG plots.

The ingestion recipe decides the two summaries (BM25 and SPLADE index both, joined;
SPLADE-short the short one):
- short summary: `Speaker: text` of the turn (with the caption of a shared photo);
- long summary: the turn with `before`/`after` neighbouring turns of the same session
  (`--window before,after`), prefixed with the session date unless `--date none`
  (`--date both` also prefixes the short summary).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CACHE,
    LOCOMO,
    RESULTS,
    Conversation,
    DiskVectorCache,
    KnownQueries,
    Turn,
    load_locomo,
    machine,
    md_table,
    turn_line,
    window,
)
from episodex import EpisodicMemory, default_embedder
from episodex._embedders.base import Embedder
from episodex._embedders.cache import VectorCacheEmbedder
from episodex._episodes.store import (
    DEFAULT_CONVERSATION_DIVERSITY,
    DEFAULT_DATED_WEIGHT,
    DEFAULT_RRF_K,
    DEFAULT_SPEAKER_WEIGHTS,
    DEFAULT_WEIGHTS,
)

AGENT = "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
METRICS = ("turn_any@5", "turn_any@10", "turn_all@10", "session_any@5")


# -- configurations -----------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """What goes into the short and the long summary of a turn's episode."""

    before: int = 1
    after: int = 1
    date: str = "long"  # none | long | both

    @property
    def name(self) -> str:
        return f"window {self.before},{self.after}, date in {self.date}"

    def summaries(self, turns: Sequence[Turn], i: int) -> tuple[str, str]:
        turn = turns[i]
        short = turn_line(turn)
        lines = (
            "\n".join(turn_line(t) for t in window(turns, i, self.before, self.after))
            if (self.before or self.after)
            else short
        )
        long = f"{turn.date}\n{lines}" if self.date in ("long", "both") else lines
        if self.date == "both":
            short = f"{turn.date}: {short}"
        return short, long


@dataclass(frozen=True)
class Rerank:
    """An idea tried on top of the engine's fused top 50, in the harness only (not the library).

    `neighbours`: each hit gains that share of the fused scores of its neighbouring turns
    (same session) found in the top 50. `session`: each hit gains that share of the top hit's
    score, scaled by how much of the top 10's score its session holds. `diversity`: the top 10
    are picked greedily, each hit's score multiplied by (1 - diversity) per hit of its session
    already picked. `drop_names`: the two speakers' names are taken out of the question (the
    harness knows them; the library does not).
    """

    neighbours: float = 0.0
    session: float = 0.0
    diversity: float = 0.0
    drop_names: bool = False

    @property
    def name(self) -> str:
        parts = [
            f"{label} {value:g}"
            for label, value in (
                ("neighbours", self.neighbours),
                ("session boost", self.session),
                ("session diversity", self.diversity),
            )
            if value
        ]
        return " + ".join(parts + (["names dropped"] if self.drop_names else []))

    def query(self, question: str, conv: Conversation) -> str:
        if not self.drop_names:
            return question
        for name in conv.speakers:
            question = re.sub(rf"\b{re.escape(name)}('s)?\b", " ", question)
        return " ".join(question.split()) or "?"

    def apply(self, hits: Sequence[tuple[str, float]]) -> list[str]:
        base = dict(hits)
        out = dict(base)
        if self.neighbours:
            for d in base:
                session, turn = d.split(":")
                for other in (f"{session}:{int(turn) - 1}", f"{session}:{int(turn) + 1}"):
                    out[d] += self.neighbours * base.get(other, 0.0)
        if self.session and hits:
            held: dict[str, float] = {}
            for d, v in hits[:10]:
                held[d.split(":")[0]] = held.get(d.split(":")[0], 0.0) + v
            top, most = hits[0][1], max(held.values())
            for d in base:
                out[d] += self.session * top * held.get(d.split(":")[0], 0.0) / most
        order = sorted(base, key=lambda d: -out[d])
        if not self.diversity:
            return order
        picked: list[str] = []
        seen: dict[str, int] = {}
        while order and len(picked) < 10:
            best = max(
                order, key=lambda d: out[d] * (1 - self.diversity) ** seen.get(d.split(":")[0], 0)
            )
            order.remove(best)
            picked.append(best)
            seen[best.split(":")[0]] = seen.get(best.split(":")[0], 0) + 1
        return picked + order


@dataclass(frozen=True)
class Search:
    """Recall options, as `EpisodicMemory.recall` takes them."""

    short_weight: float = DEFAULT_WEIGHTS["short"]
    long_weight: float = DEFAULT_WEIGHTS["long"]
    bm25_weight: float = DEFAULT_WEIGHTS["bm25"]
    rrf_k: int = DEFAULT_RRF_K
    stage1: int = 100
    label: str = ""
    splade_weight: float = DEFAULT_WEIGHTS["splade"]
    splade_short_weight: float = DEFAULT_WEIGHTS["splade_short"]
    rerank: Rerank | None = None
    dated_weight: float = DEFAULT_DATED_WEIGHT
    speaker_weight: float = DEFAULT_SPEAKER_WEIGHTS["speaker"]
    speaker_bm25_weight: float = DEFAULT_SPEAKER_WEIGHTS["speaker_bm25"]
    conversation_diversity: float = DEFAULT_CONVERSATION_DIVERSITY

    @property
    def name(self) -> str:
        if self.rerank is not None:
            return f"{replace(self, rerank=None).name} + {self.rerank.name}"
        w = f"{self.short_weight:g}/{self.long_weight:g}/{self.bm25_weight:g}"
        if self.splade_weight:
            w += f"/splade {self.splade_weight:g}"
        if self.splade_short_weight:
            w += f"/splade_short {self.splade_short_weight:g}"
        if self.dated_weight:
            w += f"/dated {self.dated_weight:g}"
        if self.speaker_weight or self.speaker_bm25_weight:
            w += f"/speaker {self.speaker_weight:g}+{self.speaker_bm25_weight:g}"
        if self.conversation_diversity:
            w += f"/diversity {self.conversation_diversity:g}"
        return self.label or f"hybrid {w} k={self.rrf_k}" + (
            "" if self.stage1 == 100 else f" s1={self.stage1}"
        )


DEFAULT_RECIPE = Recipe()
_W = DEFAULT_WEIGHTS
_SPK = DEFAULT_SPEAKER_WEIGHTS
DEFAULT = Search(
    label=f"default {_W['short']:g}/{_W['long']:g}/{_W['bm25']:g}/splade {_W['splade']:g}"
    f"/splade_short {_W['splade_short']:g}/dated {DEFAULT_DATED_WEIGHT:g}"
    f"/speaker {_SPK['speaker']:g}+{_SPK['speaker_bm25']:g}"
    f"/diversity {DEFAULT_CONVERSATION_DIVERSITY:g}, k={DEFAULT_RRF_K}"
)
#: The default without the speaker streams and conversation diversity (the eighth pass's).
UNSPOKEN = replace(
    DEFAULT,
    label=f"default {_W['short']:g}/{_W['long']:g}/{_W['bm25']:g}/splade {_W['splade']:g}"
    f"/splade_short {_W['splade_short']:g}/dated {DEFAULT_DATED_WEIGHT:g}, no speaker streams, "
    f"no diversity, k={DEFAULT_RRF_K}",
    speaker_weight=0.0,
    speaker_bm25_weight=0.0,
    conversation_diversity=0.0,
)
#: Nor the `dated` stream (the sixth pass's default).
UNDATED = replace(
    UNSPOKEN,
    label=UNSPOKEN.label.replace(f"/dated {DEFAULT_DATED_WEIGHT:g},", ", no dated,"),
    dated_weight=0.0,
)
SEED = Search(
    0.2,
    0.3,
    0.5,
    10,
    label="hybrid (seed 0.2/0.3/0.5, k=10)",
    splade_weight=0.0,
    splade_short_weight=0.0,
)
PREVIOUS = Search(
    0.15,
    0.15,
    0.7,
    10,
    label="previous default 0.15/0.15/0.7, no SPLADE",
    splade_weight=0.0,
    splade_short_weight=0.0,
)
#: The defaults of the four-stream plan (one SPLADE vector over both summaries).
FOUR_STREAMS = Search(
    0.1,
    0.1,
    0.3,
    10,
    label="four streams 0.1/0.1/0.3/splade 0.5, k=10",
    splade_weight=0.5,
    splade_short_weight=0.0,
)
DENSE = Search(
    0.5, 0.5, 0.0, label="dense only (short+long)", splade_weight=0.0, splade_short_weight=0.0
)
BM25 = Search(0.0, 0.0, 1.0, label="BM25 only", splade_weight=0.0, splade_short_weight=0.0)
SPLADE = Search(
    0.0, 0.0, 0.0, label="SPLADE only (both summaries)", splade_weight=1.0, splade_short_weight=0.0
)
SPLADE_SHORT = Search(
    0.0, 0.0, 0.0, label="SPLADE-short only", splade_weight=0.0, splade_short_weight=1.0
)
# The single-stream modes and the earlier defaults had no `dated` or speaker streams.
SEED, PREVIOUS, FOUR_STREAMS, DENSE, BM25, SPLADE, SPLADE_SHORT = (
    replace(
        s, dated_weight=0.0, speaker_weight=0.0, speaker_bm25_weight=0.0, conversation_diversity=0.0
    )
    for s in (SEED, PREVIOUS, FOUR_STREAMS, DENSE, BM25, SPLADE, SPLADE_SHORT)
)
MODES = (DENSE, BM25, SPLADE, SPLADE_SHORT, PREVIOUS, FOUR_STREAMS, UNDATED, UNSPOKEN, DEFAULT)
BASELINE = 5  # the row of MODES the exploration compares with


def parse_session_date(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


# -- the embedder: cached document AND query vectors -------------------------------------


def prepare_embedder(
    convs: Sequence[Conversation], recipes: Sequence[Recipe], cache_dir: Path, *, progress: bool
) -> KnownQueries:
    real = default_embedder()
    docs = DiskVectorCache(real.model_id, cache_dir)
    texts = sorted(
        {
            t
            for c in convs
            for r in recipes
            for i in range(len(c.turns))
            for t in r.summaries(c.turns, i)
        }
    )
    todo = docs.missing(texts)
    if todo:
        bar = tqdm(
            total=len(todo), desc="embed episode texts (cached)", unit="text", disable=not progress
        )
        docs.fill(real, todo, progress=bar.update)
        bar.close()
    qcache = DiskVectorCache(f"query-{real.model_id}", cache_dir)
    questions = sorted({q.question for c in convs for q in c.questions})
    missing = qcache.missing(questions)
    if missing:
        bar = tqdm(
            total=len(missing), desc="embed questions (cached)", unit="q", disable=not progress
        )

        class _AsQuery:
            def embed_documents(self, batch: Sequence[str]) -> np.ndarray:
                out = np.stack([real.embed_query(t) for t in batch])
                bar.update(len(batch))
                return out

        qcache.fill(_AsQuery(), missing, batch=64)  # type: ignore[arg-type]
        bar.close()
    return KnownQueries(
        VectorCacheEmbedder(real, docs.table(texts)), qcache.table(questions), fallback=True
    )


# -- ingest and evaluate ------------------------------------------------------------------


def ingest(mem: EpisodicMemory, conv: Conversation, recipe: Recipe) -> None:
    episodes = []
    for i, turn in enumerate(conv.turns):
        short, long = recipe.summaries(conv.turns, i)
        when = parse_session_date(turn.date)
        episodes.append(
            {
                "short_summary": short,
                "long_summary": long,
                "user_id": conv.name,
                "agent_id": AGENT,
                "conversation_id": f"session-{turn.session}",
                "start_index": turn.index,
                "timestamp_begin": when,
                "timestamp_end": when,
                "speakers": [turn.speaker],
                "metadata": {"dia_id": turn.dia_id, "session": turn.session},
            }
        )
    mem.store.memorize_many(episodes)


def recalled(
    mem: EpisodicMemory, conv: Conversation, question: str, search: Search, k: int = 10
) -> list[str]:
    idea = search.rerank
    res = mem.store.recall(
        user_id=conv.name,
        agent_id=AGENT,
        query=idea.query(question, conv) if idea else question,
        previous_conversation_limit=50 if idea else k,
        same_conversation_limit=0,
        short_weight=search.short_weight,
        long_weight=search.long_weight,
        bm25_weight=search.bm25_weight,
        splade_weight=search.splade_weight,
        splade_short_weight=search.splade_short_weight,
        dated_weight=search.dated_weight,
        speaker_weight=search.speaker_weight,
        speaker_bm25_weight=search.speaker_bm25_weight,
        conversation_diversity=search.conversation_diversity,
        stage1_limit=search.stage1,
        rrf_k=search.rrf_k,
        # Ranks per stream do not change the order; leaving them out halves the run time.
        with_stream_ranks=False,
    )
    hits = [(item["metadata"]["dia_id"], item["score"]) for item in res["previous_conversations"]]
    return idea.apply(hits)[:k] if idea else [d for d, _ in hits]


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    ev = set(evidence)
    top5, top10 = set(ranked[:5]), set(ranked[:10])
    ev_sessions = {e.split(":")[0] for e in ev}
    s5 = {r.split(":")[0] for r in ranked[:5]}
    return {
        "turn_any@5": float(bool(ev & top5)),
        "turn_any@10": float(bool(ev & top10)),
        "turn_all@10": float(ev <= top10),
        "session_any@5": float(bool(ev_sessions & s5)),
    }


def evaluate(
    mems: dict[str, EpisodicMemory], convs: Sequence[Conversation], search: Search
) -> dict[str, Any]:
    """Per question scores, aggregated per category, per conversation and overall (cat. 1-4)."""
    rows: list[tuple[str, int, dict[str, float]]] = []
    for conv in convs:
        for q in conv.questions:
            if q.category not in CATEGORIES or not q.evidence:
                continue
            rows.append(
                (
                    conv.name,
                    q.category,
                    score(recalled(mems[conv.name], conv, q.question, search), q.evidence),
                )
            )

    def agg(sel: Sequence[dict[str, float]]) -> dict[str, float]:
        return {
            m: (sum(r[m] for r in sel) / len(sel) if sel else float("nan")) for m in METRICS
        } | {"n": len(sel)}

    out: dict[str, Any] = {"all": agg([r for _, _, r in rows])}
    out["by_category"] = {
        CATEGORIES[c]: agg([r for _, cc, r in rows if cc == c]) for c in CATEGORIES
    }
    out["by_conversation"] = {c.name: agg([r for n, _, r in rows if n == c.name]) for c in convs}
    return out


class Bench:
    """One Qdrant Edge store per recipe, every conversation ingested, reused across searches."""

    def __init__(self, convs: Sequence[Conversation], embedder: Embedder, folder: Path) -> None:
        self.convs = convs
        self.embedder = embedder
        self.folder = folder
        self._open: dict[Recipe, dict[str, EpisodicMemory]] = {}

    def mems(self, recipe: Recipe) -> dict[str, EpisodicMemory]:
        if recipe not in self._open:
            path = self.folder / f"quality-{recipe.before}-{recipe.after}-{recipe.date}"
            shutil.rmtree(path, ignore_errors=True)
            mem = EpisodicMemory(path=path, embedder=self.embedder)
            for conv in self.convs:
                ingest(mem, conv, recipe)
            self._open[recipe] = {c.name: mem for c in self.convs}
        return self._open[recipe]

    def run(self, recipe: Recipe, search: Search) -> dict[str, Any]:
        t = time.perf_counter()
        res = evaluate(self.mems(recipe), self.convs, search)
        res["recipe"] = recipe.name
        res["search"] = search.name
        res["seconds"] = time.perf_counter() - t
        return res

    def close(self) -> None:
        seen: set[int] = set()
        for mems in self._open.values():
            for mem in mems.values():
                if id(mem) not in seen:
                    seen.add(id(mem))
                    mem.close()


# -- exploration --------------------------------------------------------------------------


def exploration_grid() -> tuple[list[Search], list[Recipe]]:
    """Fusion weights of the five streams (summing to 1) at two rrf_k, and three recipes.

    The learned sparse weight is shared between SPLADE over both summaries and SPLADE over the
    short one (share 0 is the four-stream plan).
    """
    searches: list[Search] = []
    for k in (10, 20):
        for dense in (0.1, 0.2):
            for bm25 in (0.1, 0.2, 0.3):
                learned = round(1.0 - dense - bm25, 3)
                for short_share in (0.0, 0.4, 0.5, 0.6):
                    half = round(dense / 2, 3)
                    short = round(learned * short_share, 3)
                    searches.append(
                        Search(
                            half,
                            half,
                            bm25,
                            k,
                            splade_weight=round(learned - short, 3),
                            splade_short_weight=short,
                        )
                    )
    recipes = [Recipe(1, 1, "long"), Recipe(0, 0, "long"), Recipe(2, 2, "long")]
    return searches, recipes


def explore(bench: Bench, *, progress: bool) -> list[dict[str, Any]]:
    """Every search of the grid on every recipe of the grid."""
    searches, recipes = exploration_grid()
    out: list[dict[str, Any]] = []
    for r in recipes:
        for s in tqdm(searches, desc=f"search options, {r.name}", disable=not progress):
            out.append(bench.run(r, s))
    return out


IDEAS = (
    Rerank(neighbours=0.1),
    Rerank(neighbours=0.2),
    Rerank(neighbours=0.3),
    Rerank(session=0.1),
    Rerank(session=0.2),
    Rerank(session=0.3),
    Rerank(diversity=0.1),
    Rerank(diversity=0.2),
    Rerank(drop_names=True),
)


def try_ideas(bench: Bench, *, progress: bool) -> list[dict[str, Any]]:
    """The default search alone and with each idea, on the default recipe and window 2,2."""
    out: list[dict[str, Any]] = []
    for recipe in (DEFAULT_RECIPE, Recipe(2, 2, "long")):
        base = Search()
        for search in (base, *(replace(base, rerank=i) for i in IDEAS)):
            out.append(bench.run(recipe, search))
        if progress:
            print(f"ideas done on {recipe.name}")
    return out


def objective(v: dict[str, float]) -> float:
    """What the choice maximises: the mean of the three targeted metrics."""
    return (v["turn_any@5"] + v["turn_any@10"] + v["session_any@5"]) / 3


def leave_one_out(results: Sequence[dict[str, Any]], convs: Sequence[str]) -> list[dict[str, Any]]:
    """For each conversation: the configuration best on the other two, scored on it.

    Scores over two conversations weigh each by its number of questions.
    """
    out: list[dict[str, Any]] = []
    for held in convs:
        train = [c for c in convs if c != held]

        def pooled(res: dict[str, Any], train: list[str] = train) -> float:
            n = sum(res["by_conversation"][c]["n"] for c in train)
            return (
                sum(
                    objective(res["by_conversation"][c]) * res["by_conversation"][c]["n"]
                    for c in train
                )
                / n
            )

        best = max(results, key=pooled)
        out.append(
            {
                "held_out": held,
                "chosen": best["search"],
                "recipe": best["recipe"],
                "train_objective": pooled(best),
                "held_out_scores": best["by_conversation"][held],
            }
        )
    return out


# -- report -------------------------------------------------------------------------------


def ideas_section(ideas: Sequence[dict[str, Any]], convs: Sequence[str]) -> list[str]:
    """Each idea's overall scores, and what leaving one conversation out picks among them."""
    keys = ("turn_any@5", "turn_any@10", "session_any@5")
    rows = [
        [
            r["recipe"],
            r["search"],
            *(pct(r["all"][m]) for m in keys),
            "/".join(f"{pct(r['by_conversation'][c]['turn_any@5']):.1f}" for c in convs),
        ]
        for r in ideas
    ]
    picks: list[list[Any]] = []
    for recipe in dict.fromkeys(r["recipe"] for r in ideas):
        mine = [r for r in ideas if r["recipe"] == recipe]
        for pick in leave_one_out(mine, convs):
            v = pick["held_out_scores"]
            base = mine[0]["by_conversation"][pick["held_out"]]
            picks.append(
                [recipe, pick["held_out"], pick["chosen"]]
                + ["/".join(f"{pct(x[m]):.1f}" for m in keys) for x in (v, base)]
            )
    return [
        "## Ideas on top of the default (harness-side, not in the library)",
        "",
        "Each idea re-ranks the engine's fused top 50 of the default search (see `Rerank`), or "
        "takes the speakers' names out of the question. Overall figures, then the "
        "leave-one-out pick among the default and the ideas.",
        "",
        md_table(["recipe", "search", *(f"{m} %" for m in keys), "any@5 per conversation %"], rows),
        "",
        md_table(
            [
                "recipe",
                "held out",
                "chosen on the other two",
                "chosen, held out %",
                "default, held out %",
            ],
            picks,
        ),
        "",
    ]


def loo_by_recipe(explore_rows: Sequence[dict[str, Any]], convs: Sequence[str]) -> list[str]:
    """The leave-one-out check within each recipe, next to the fixed default and four streams.

    The recipe is the caller's ingestion choice: this shows that the weights chosen on two
    conversations also hold on the third whatever the recipe, and how the fixed default and
    the four-stream plan score on the same held-out conversation.
    """
    default_name = Search(label="").name  # the grid names the default's weights this way
    four_name = Search(0.1, 0.1, 0.3, 10, splade_weight=0.5, splade_short_weight=0.0).name
    rows: list[list[Any]] = []
    for recipe in dict.fromkeys(r["recipe"] for r in explore_rows):
        mine = [r for r in explore_rows if r["recipe"] == recipe]
        by_name = {r["search"]: r for r in mine}
        for pick in leave_one_out(mine, convs):
            held = pick["held_out"]
            cells = [recipe, held, pick["chosen"]]
            for res_scores in (
                pick["held_out_scores"],
                by_name[default_name]["by_conversation"][held],
                by_name[four_name]["by_conversation"][held],
            ):
                cells += [
                    "/".join(
                        f"{pct(res_scores[m]):.1f}"
                        for m in ("turn_any@5", "turn_any@10", "session_any@5")
                    )
                ]
            rows.append(cells)
    return [
        "## Leave one conversation out, within each recipe",
        "",
        "Turn any@5 / turn any@10 / session any@5 on the held-out conversation: of the "
        "configuration chosen on the other two (same recipe), of the default "
        f"({default_name}) and of the four-stream plan ({four_name}).",
        "",
        md_table(
            [
                "recipe",
                "held out",
                "chosen on the other two",
                "chosen, held out %",
                "default, held out %",
                "four streams, held out %",
            ],
            rows,
        ),
        "",
    ]


def pct(x: float) -> float:
    return 100.0 * x


def table_modes(results: Sequence[dict[str, Any]]) -> str:
    rows = []
    for res in results:
        for cat, v in [*res["by_category"].items(), ("all 1-4", res["all"])]:
            rows.append([res["search"], cat, v["n"], *(pct(v[m]) for m in METRICS)])
    return md_table(["mode", "category", "questions", *(f"{m} %" for m in METRICS)], rows)


def table_explore(
    results: Sequence[dict[str, Any]], baseline: dict[str, Any], convs: Sequence[str]
) -> str:
    rows = []
    for res in results:
        per_conv = [pct(res["by_conversation"][c]["turn_any@10"]) for c in convs]
        base_conv = [pct(baseline["by_conversation"][c]["turn_any@10"]) for c in convs]
        wins = sum(1 for a, b in zip(per_conv, base_conv, strict=True) if a > b + 1e-9)
        losses = sum(1 for a, b in zip(per_conv, base_conv, strict=True) if a < b - 1e-9)
        rows.append(
            [
                res["recipe"],
                res["search"],
                *(pct(res["all"][m]) for m in METRICS),
                *per_conv,
                f"{wins}/{losses}",
            ]
        )
    return md_table(
        [
            "recipe",
            "search",
            *(f"{m} %" for m in METRICS),
            *(f"{c} any@10 %" for c in convs),
            "convs better/worse (any@10)",
        ],
        rows,
    )


def plot_modes(
    results: Sequence[dict[str, Any]], out: Path, name: str, metric: str = "turn_any@10"
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = [*CATEGORIES.values(), "all 1-4"]
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    width = 0.8 / len(results)
    for j, res in enumerate(results):
        vals = [
            pct(res["by_category"][c][metric])
            if c in res["by_category"]
            else pct(res["all"][metric])
            for c in cats
        ]
        ax.bar(
            np.arange(len(cats)) + j * width,
            vals,
            width,
            label=f"{res['search']} ({res['recipe']})",
        )
    ax.set_xticks(np.arange(len(cats)) + width * (len(results) - 1) / 2, cats)
    ax.set_ylabel(f"{metric} %")
    ax.set_ylim(0, 100)
    ax.set_title(f"LoCoMo dev (3 conversations): {metric}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)


def report(payload: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "recall_quality.json").write_text(json.dumps(payload, indent=2, default=str))
    m = payload["machine"]
    convs = payload["conversations"]
    lines = [
        "# Recall quality on the LoCoMo development split",
        "",
        f"Run {m['date']}; conversations {', '.join(convs)} ({payload['questions']} questions of "
        "categories 1-4 with evidence; category 5 is adversarial and has no evidence to find). "
        "Embedder: the bundled all-MiniLM-L6-v2 (int8). Engine: embedded Qdrant Edge.",
        "",
        f"Ingestion recipe: {payload['recipe']} (one episode per turn; short summary = the turn, "
        "long summary = the turn with its neighbours of the same session).",
        "",
        "## Dense only, BM25 only, hybrid",
        "",
        table_modes(payload["modes"]),
        "",
        "![recall_any@10 by category](quality_modes.png)",
        "",
    ]
    if payload.get("custom"):
        lines += ["## The configuration asked for", "", table_modes([payload["custom"]]), ""]
    if payload.get("explore"):
        lines += [
            "## Exploration",
            "",
            "Overall figures are over all category 1-4 questions of the three conversations; the "
            "per-conversation columns and the last column (conversations where turn recall_any@10 "
            f"beats / trails the baseline, {payload['modes'][BASELINE]['search']} with the default "
            "recipe) check that a gain is not one conversation's luck.",
            "",
            table_explore(payload["explore"], payload["modes"][BASELINE], convs),
            "",
        ]
    if payload.get("leave_one_out"):
        rows = [
            [
                r["held_out"],
                r["chosen"],
                r["recipe"],
                pct(r["train_objective"]),
                *(pct(r["held_out_scores"][m]) for m in METRICS),
            ]
            for r in payload["leave_one_out"]
        ]
        lines += [
            "## Leave one conversation out",
            "",
            "For each conversation, the configuration of the exploration with the best mean of "
            "turn any@5, turn any@10 and session any@5 on the other two, scored on the held-out "
            "one.",
            "",
            md_table(
                [
                    "held out",
                    "chosen on the other two",
                    "recipe",
                    "objective on the two %",
                    *(f"held-out {m} %" for m in METRICS),
                ],
                rows,
            ),
            "",
        ]
    if payload.get("explore"):
        lines += loo_by_recipe(payload["explore"], convs)
    if payload.get("ideas"):
        lines += ideas_section(payload["ideas"], convs)
    if payload.get("recommended"):
        per_conv = [
            [res["search"], conv, *(pct(v[m]) for m in METRICS)]
            for res in payload["recommended"]
            for conv, v in res["by_conversation"].items()
        ]
        lines += [
            "## The configuration asked for against the previous default",
            "",
            table_modes(payload["recommended"]),
            "",
            "Each conversation on its own:",
            "",
            md_table(["search", "conversation", *(f"{m} %" for m in METRICS)], per_conv),
            "",
            "![default vs seed weights](quality_recommended.png)",
            "",
        ]
    (out / "recall_quality.md").write_text("\n".join(lines) + "\n")
    plot_modes(payload["modes"], out, "quality_modes.png")
    if payload.get("recommended"):
        plot_modes(payload["recommended"], out, "quality_recommended.png")


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--data", type=Path, default=LOCOMO)
    p.add_argument("--conversations", default=None, help="comma list of file stems (default all)")
    p.add_argument(
        "--max-turns", type=int, default=None, help="keep only the first N turns (smoke runs)"
    )
    p.add_argument(
        "--max-questions", type=int, default=None, help="keep only the first N questions"
    )
    p.add_argument("--short-weight", type=float, default=None)
    p.add_argument("--long-weight", type=float, default=None)
    p.add_argument("--bm25-weight", type=float, default=None)
    p.add_argument("--splade-weight", type=float, default=None)
    p.add_argument("--splade-short-weight", type=float, default=None)
    p.add_argument("--rrf-k", type=int, default=None)
    p.add_argument("--stage1", type=int, default=None)
    p.add_argument(
        "--window", default="1,1", help="neighbouring turns before,after in the long summary"
    )
    p.add_argument("--date", default="long", choices=("none", "long", "both"))
    p.add_argument("--explore", action="store_true", help="also run the exploration grid")
    p.add_argument(
        "--ideas", action="store_true", help="also try the re-rank and query ideas (Rerank)"
    )
    p.add_argument(
        "--recommend",
        default=None,
        help="'before,after,date;short,long,bm25,splade,splade_short,k' to report against the "
        "previous default",
    )
    p.add_argument("--cache", type=Path, default=CACHE)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--report-only", action="store_true", help="rewrite the report from the JSON")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.report_only:
        payload = json.loads((args.out / "recall_quality.json").read_text())
        report(payload, args.out)
        return payload
    progress = not args.no_progress
    names = args.conversations.split(",") if args.conversations else None
    convs = load_locomo(args.data, names)
    for c in convs:
        if args.max_turns is not None:
            c.turns = c.turns[: args.max_turns]
            kept = {t.dia_id for t in c.turns}
            c.questions = [q for q in c.questions if q.evidence and set(q.evidence) <= kept]
        if args.max_questions is not None:
            c.questions = c.questions[: args.max_questions]
    before, after = (int(x) for x in args.window.split(","))
    recipe = Recipe(before, after, args.date)
    recipes = [recipe]
    rec: tuple[Recipe, Search] | None = None
    if args.recommend:
        r, s = args.recommend.split(";")
        b, a, d = r.split(",")
        sw, lw, bw, spw, ssw, k = s.split(",")
        rec = (
            Recipe(int(b), int(a), d),
            Search(
                float(sw),
                float(lw),
                float(bw),
                int(k),
                splade_weight=float(spw),
                splade_short_weight=float(ssw),
            ),
        )
        recipes.append(rec[0])
    if args.explore:
        recipes += exploration_grid()[1]
    if args.ideas:
        recipes.append(Recipe(2, 2, "long"))
    embedder = prepare_embedder(convs, recipes, args.cache, progress=progress)
    bench = Bench(convs, embedder, args.cache)
    try:
        modes = [bench.run(recipe, s) for s in MODES]
        payload: dict[str, Any] = {
            "machine": machine(),
            "conversations": [c.name for c in convs],
            "questions": modes[0]["all"]["n"],
            "recipe": recipe.name,
            "modes": modes,
        }
        given = {
            k: getattr(args, k)
            for k in (
                "short_weight",
                "long_weight",
                "bm25_weight",
                "rrf_k",
                "splade_weight",
                "splade_short_weight",
            )
        }
        if any(v is not None for v in given.values()) or args.stage1 is not None:
            custom = Search(
                **{k: v if v is not None else getattr(DEFAULT, k) for k, v in given.items()},
                stage1=args.stage1 or 100,
            )
            payload["custom"] = bench.run(recipe, custom)
        if args.ideas:
            payload["ideas"] = try_ideas(bench, progress=progress)
        if args.explore:
            payload["explore"] = explore(bench, progress=progress)
            payload["leave_one_out"] = leave_one_out(payload["explore"], [c.name for c in convs])
        if rec is not None:
            payload["recommended"] = [bench.run(recipe, PREVIOUS), bench.run(*rec)]
    finally:
        bench.close()
    report(payload, args.out)
    print(f"wrote {args.out / 'recall_quality.md'}")
    _print_summary(payload)
    return payload


def _print_summary(payload: dict[str, Any]) -> None:
    show: Callable[[dict[str, Any]], str] = lambda r: " ".join(  # noqa: E731
        f"{m}={pct(r['all'][m]):.1f}" for m in METRICS
    )
    for r in payload["modes"]:
        print(f"{r['search']:40s} {show(r)}")
    for r in payload.get("explore", []):
        print(f"{r['recipe'][:28]:28s} {r['search'][:34]:34s} {show(r)}")
    for r in payload.get("leave_one_out", []):
        held = " ".join(f"{m}={pct(r['held_out_scores'][m]):.1f}" for m in METRICS)
        print(f"held out {r['held_out']}: chose {r['chosen']} ({r['recipe']}) -> {held}")


if __name__ == "__main__":
    main()
