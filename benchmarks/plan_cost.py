"""What the SPLADE-short stream costs a recall and an ingest, in one run.

    .venv/bin/python benchmarks/plan_cost.py          # after recall_quality.py built its store

Recall: every LoCoMo dev question against the store `recall_quality.py` built for the default
recipe (`.cache/quality-1-1-long`), with the four-stream plan (SPLADE over both summaries only,
0.1/0.1/0.3/0.5, k=10) and with the default five-stream plan, alternating which goes first,
fastest of `--repeat` per question, stream ranks on (the default path).

Ingest: `memorize_many` of the first `--ingest` turns into a fresh store, and the time the
short summaries' SPLADE vectors take on their own (the work the fifth stream adds).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_quality as rq
from _common import CACHE, RESULTS, load_locomo, machine
from episodex import EpisodicMemory
from episodex._embedders.splade import default_splade

FOUR: dict[str, Any] = {
    "short_weight": 0.1,
    "long_weight": 0.1,
    "bm25_weight": 0.3,
    "splade_weight": 0.5,
    "splade_short_weight": 0.0,
    "rrf_k": 10,
}


def recall_times(repeat: int) -> dict[str, Any]:
    convs = load_locomo()
    recipe = rq.DEFAULT_RECIPE
    embedder = rq.prepare_embedder(convs, [recipe], CACHE, progress=False)
    path = CACHE / f"quality-{recipe.before}-{recipe.after}-{recipe.date}"
    plans: dict[str, dict[str, Any]] = {"four streams": FOUR, "default (five streams)": {}}
    best: dict[str, list[float]] = {name: [] for name in plans}
    mem = EpisodicMemory(path=path, embedder=embedder)
    try:
        questions = [(c.name, q.question) for c in convs for q in c.questions]
        for i, (user, question) in enumerate(questions):
            order = list(plans) if i % 2 == 0 else list(reversed(plans))
            for name in order:
                times = []
                for _ in range(repeat):
                    t = time.perf_counter()
                    mem.store.recall(
                        user_id=user,
                        agent_id=rq.AGENT,
                        query=question,
                        same_conversation_limit=0,
                        **plans[name],
                    )
                    times.append(time.perf_counter() - t)
                best[name].append(min(times))
    finally:
        mem.close()
    out = {
        name: {
            "p50_ms": 1000 * statistics.median(v),
            "p95_ms": 1000 * statistics.quantiles(v, n=20)[18],
        }
        for name, v in best.items()
    }
    out["ratio_p50"] = out["default (five streams)"]["p50_ms"] / out["four streams"]["p50_ms"]
    out["questions"] = len(questions)
    return out


def ingest_times(n: int) -> dict[str, Any]:
    convs = load_locomo()
    recipe = rq.DEFAULT_RECIPE
    embedder = rq.prepare_embedder(convs, [recipe], CACHE, progress=False)
    conv = convs[0]
    conv.turns = conv.turns[:n]
    folder = Path(tempfile.mkdtemp(prefix="plan-cost-"))
    try:
        mem = EpisodicMemory(path=folder / "s", embedder=embedder)
        t = time.perf_counter()
        rq.ingest(mem, conv, recipe)
        total = time.perf_counter() - t
        mem.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    shorts = [recipe.summaries(conv.turns, i)[0] for i in range(len(conv.turns))]
    t = time.perf_counter()
    default_splade().documents(shorts)
    short = time.perf_counter() - t
    return {
        "episodes": len(conv.turns),
        "memorize_many_s": total,
        "short_splade_s": short,
        "episodes_per_s": len(conv.turns) / total,
        "episodes_per_s_without_short_splade": len(conv.turns) / (total - short),
        "ratio": (total - short) / total,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--ingest", type=int, default=400)
    args = p.parse_args()
    payload = {
        "machine": machine(),
        "recall": recall_times(args.repeat),
        "ingest": ingest_times(args.ingest),
    }
    (RESULTS / "plan_cost.json").write_text(json.dumps(payload, indent=2))
    print(json.dumps(payload["recall"], indent=2))
    print(json.dumps(payload["ingest"], indent=2))


if __name__ == "__main__":
    main()
