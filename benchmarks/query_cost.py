"""What the query encoders cost per recall, before (main's bundled model) and after, in one run.

    .venv/bin/python benchmarks/query_cost.py --before-python /work/main/.venv/bin/python

Times, on LoCoMo dev questions, the bundled dense `embed_query` and SPLADE `query` of this
checkout in one loop (rotating order, fastest of `--repeat` per question), and the bundled
`embed_query` of another interpreter's episodex in a child process started in the same run.
The engine's share of a recall is measured by `perf.py`; this isolates the encoders, which
is what the new stream adds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TIMER = r"""
import json, statistics, sys, time
sys.path.insert(0, {here!r})
from _common import load_locomo
from episodex import default_embedder
qs = sorted({{q.question for c in load_locomo() for q in c.questions}})[:{n}]
emb = default_embedder()
emb.embed_query("warm up")
best = []
for q in qs:
    times = []
    for _ in range({repeat}):
        t = time.perf_counter(); emb.embed_query(q); times.append(time.perf_counter() - t)
    best.append(min(times))
print(json.dumps(dict(p50_ms=1000 * statistics.median(best))))
"""


def main() -> None:
    from _common import load_locomo
    from episodex import SpladeEncoder, default_embedder

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--before-python", default=None)
    args = p.parse_args()
    qs = sorted({q.question for c in load_locomo() for q in c.questions})[: args.questions]
    dense, splade = default_embedder(), SpladeEncoder()
    dense.embed_query("warm up")
    splade.query("warm up")
    ops = {"dense": dense.embed_query, "splade": splade.query}
    best: dict[str, list[float]] = {k: [] for k in ops}
    for i, q in enumerate(qs):
        names = list(ops)[i % 2 :] + list(ops)[: i % 2]
        for name in names:
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                ops[name](q)
                times.append(time.perf_counter() - t)
            best[name].append(min(times))
    out = {f"after {k} p50 ms": 1000 * statistics.median(v) for k, v in best.items()}
    if args.before_python:
        code = TIMER.format(here=str(HERE), n=args.questions, repeat=args.repeat)
        res = subprocess.run(
            [args.before_python, "-c", code], check=True, capture_output=True, text=True
        )
        out["before dense p50 ms"] = json.loads(res.stdout.strip().splitlines()[-1])["p50_ms"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
