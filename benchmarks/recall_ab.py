"""Recall latency of two checkouts on their own 100k stores, measured in one interleaved run.

    .venv/bin/python benchmarks/recall_ab.py \\
        --before-python ../old/.venv/bin/python --before-store ../old/benchmarks/.cache/perf-edge-store \\
        --after-store benchmarks/.cache/perf-edge-store --queries 300

Each side runs in its own process, with its own interpreter and its own episodex (so an older
release is measured with its own models and engine settings), on the store `perf.py` built for it
(100,000 episodes over 100 users and 20 conversations each). The driver sends the same block
of queries to one side then the other, swapping who goes first on every block, so load on this
shared machine falls on both alike. Before each side's block it waits `--settle-ms`: an older
onnxruntime's threads busy-wait on every core for a while after a run, and without the wait
they slow down whichever side runs next.
In paced modes the worker idles N ms before each recall, as an agent does between turns.
Timed: `await EpisodicMemory.recall(...)` end to end (or, with `--call recall_block`, the prompt
block the adapters ask for), with a conversation id (both sides: same-conversation and
previous-conversation matches), after `--warmup` untimed recalls.
Writes `results/recall_ab.md` and `.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import RESULTS, load_locomo, machine

# Runs inside each side's interpreter: only the public API both releases share.
WORKER = r"""
import asyncio, json, sys, time
from episodex import EpisodicMemory

async def main(path, call):
    mem = EpisodicMemory(path=path)
    recall = getattr(mem, call)
    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        out = []
        for kw in job["recalls"]:
            if job["gap"]:
                time.sleep(job["gap"])
            t = time.perf_counter()
            await recall(**kw)
            out.append((time.perf_counter() - t) * 1000)
        print(json.dumps(out), flush=True)
    mem.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""

USERS = 100
CONVERSATIONS = 20
AGENT = "bench"


class Side:
    """One checkout's interpreter serving recalls over a pipe."""

    def __init__(self, name: str, python: str, store: str, call: str = "recall") -> None:
        self.name = name
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [python, "-c", WORKER, store, call],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"{name}: worker did not start ({line!r})")
        self.samples: list[float] = []

    def recall(self, kws: list[dict[str, str]], *, keep: bool, gap: float = 0.0) -> None:
        """Run the recalls, each after `gap` seconds idle; keep their times."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"recalls": kws, "gap": gap}) + "\n")
        self.proc.stdin.flush()
        times: list[float] = json.loads(self.proc.stdout.readline())
        if keep:
            self.samples.extend(times)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def percentile(xs: list[float], p: float) -> float:
    """The p-th percentile by nearest rank."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--before-python", required=True)
    ap.add_argument("--before-store", required=True)
    ap.add_argument("--after-python", default=sys.executable)
    ap.add_argument("--after-store", required=True)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument(
        "--gaps-ms",
        type=lambda v: [float(x) for x in v.split(",")],
        default=[10.0, 50.0],
        help="idle before each recall, one paced mode per value",
    )
    ap.add_argument("--block", type=int, default=20, help="recalls per side per turn")
    ap.add_argument(
        "--settle-ms", type=float, default=200.0, help="idle before a side's turn starts"
    )
    ap.add_argument(
        "--call",
        choices=("recall", "recall_block"),
        default="recall",
        help="what each recall calls: `recall`, or `recall_block` (the prompt block the adapters use)",
    )
    ap.add_argument("--out", default=str(RESULTS / "recall_ab"))
    args = ap.parse_args()

    questions = [q.question for conv in load_locomo() for q in conv.questions]

    def kwargs(i: int) -> dict[str, str]:
        return {
            "user_id": f"user-{i % USERS:03d}",
            "agent_id": AGENT,
            "query": questions[(i * 37) % len(questions)],
            "conversation_id": f"conv-{(i * 7) % CONVERSATIONS:02d}",
        }

    load = [os.getloadavg()[0]]
    stats: dict[str, dict[str, dict[str, float]]] = {}
    modes = ["back_to_back", *(f"paced_{g:g}ms" for g in args.gaps_ms)]
    for mode in modes:
        sides = [
            Side("before", args.before_python, args.before_store, args.call),
            Side("after", args.after_python, args.after_store, args.call),
        ]
        gap = 0.0 if mode == "back_to_back" else float(mode[6:-2]) / 1000
        try:
            for side in sides:
                side.recall([kwargs(i) for i in range(args.warmup)], keep=False)
            for n, start in enumerate(range(0, args.queries, args.block)):
                kws = [
                    kwargs(args.warmup + i)
                    for i in range(start, min(args.queries, start + args.block))
                ]
                for side in sides if n % 2 else sides[::-1]:
                    # Let the other side go quiet first: an older onnxruntime's threads spin on
                    # both cores for a while after a run, and would slow this side down.
                    time.sleep(args.settle_ms / 1000)
                    # The block's first recall only re-warms this side's caches after the other's.
                    side.recall(kws[:1], keep=False)
                    side.recall(kws, keep=True, gap=gap)
        finally:
            for side in sides:
                side.close()
        stats[mode] = {
            s.name: {
                "p50_ms": statistics.median(s.samples),
                "p95_ms": percentile(s.samples, 95),
                "n": len(s.samples),
            }
            for s in sides
        }
    load.append(os.getloadavg()[0])
    ratios = {
        mode: {
            "p50": v["after"]["p50_ms"] / v["before"]["p50_ms"],
            "p95": v["after"]["p95_ms"] / v["before"]["p95_ms"],
        }
        for mode, v in stats.items()
    }
    report = {
        "stats": stats,
        "after_over_before": ratios,
        "load_average": load,
        "machine": machine(),
        "args": vars(args),
    }
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    lines = [
        "# Recall latency, before vs after, one interleaved run (100k episodes, Qdrant Edge)",
        "",
        f"Timed: `await EpisodicMemory.{args.call}(...)`. "
        f"Load average {load[0]:.2f} at start, {load[1]:.2f} at end; {args.queries} timed "
        f"queries per side and mode after {args.warmup} warm-up. back_to_back: blocks of "
        f"{args.block} recalls, sides alternating after {args.settle_ms:g} ms idle; paced_N: the "
        "same blocks, each recall after N ms idle.",
        "",
        "| mode | side | p50 ms | p95 ms |",
        "|---|---|---|---|",
        *(
            f"| {mode} | {n} | {v['p50_ms']:.2f} | {v['p95_ms']:.2f} |"
            for mode, per in stats.items()
            for n, v in per.items()
        ),
        "",
        *(
            f"- {mode}: after / before p50 **{r['p50']:.2f}x**, p95 {r['p95']:.2f}x"
            for mode, r in ratios.items()
        ),
        "",
    ]
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
