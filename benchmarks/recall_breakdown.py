"""Where one recall's time goes at 100k: the query encoders, the engine batch, the rest.

    .venv/bin/python benchmarks/recall_breakdown.py benchmarks/.cache/perf-edge-store
    .venv/bin/python benchmarks/recall_breakdown.py <store> --cached-streams

Runs 320 recalls (the `recall_ab.py` queries, users and conversations) in blocks of 20 after
200 ms idle, with the store's own encoders and engine wrapped by timers, and prints the median
of each part over the last 300. `--cached-streams` encodes every query first, so the engine is
timed without the models running just before it (their weights push the user's vectors out
of the CPU caches). Only the LoCoMo questions are read from this folder: run it with an older
checkout's interpreter (e.g. `../old/.venv/bin/python benchmarks/recall_breakdown.py
../old/benchmarks/.cache/perf-edge-store`) to compare releases part by part.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev"


def questions() -> list[str]:
    """Every LoCoMo dev question, in the order `_common.load_locomo` reads them."""
    out: list[str] = []
    for path in sorted(LOCOMO.glob("conv-*.json")):
        out.extend(str(q["question"]) for q in json.loads(path.read_text())["qa"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--cached-streams", action="store_true")
    args = ap.parse_args()

    from episodex import EpisodicMemory

    qs = questions()
    mem = EpisodicMemory(path=args.store)
    store: Any = mem.store
    times: dict[str, list[float]] = {}

    def timed(obj: Any, name: str, label: str) -> None:
        inner: Callable[..., Any] = getattr(obj, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                times.setdefault(label, []).append((time.perf_counter() - start) * 1000)

        setattr(obj, name, wrapper)

    def kwargs(i: int) -> dict[str, str]:
        return {
            "user_id": f"user-{i % 100:03d}",
            "agent_id": "bench",
            "query": qs[(i * 37) % len(qs)],
            "conversation_id": f"conv-{(i * 7) % 20:02d}",
        }

    if args.cached_streams:
        encode = store._streams
        cache: dict[str, Any] = {}

        def cached(query: str, *rest: Any) -> Any:
            if query not in cache:
                cache[query] = encode(query, *rest)
            return cache[query]

        store._streams = cached
        for i in range(320):
            store.recall(**{**kwargs(i), "user_id": "nobody"})
    else:
        timed(store.embedder, "embed_query", "dense encoder")
        if getattr(store, "splade", None) is not None:
            timed(store.splade, "query", "SPLADE encoder")
        timed(store, "_streams", "both encoders (and BM25)")
    timed(store.engine, "query_explained", "engine batch")
    for block in range(16):
        time.sleep(0.2)
        for j in range(20):
            start = time.perf_counter()
            store.recall(**kwargs(block * 20 + j))
            times.setdefault("recall", []).append((time.perf_counter() - start) * 1000)
    mem.close()
    print(
        json.dumps(
            {
                "python": sys.executable,
                "store": args.store,
                "cached_streams": args.cached_streams,
                "p50_ms": {k: round(statistics.median(v[20:]), 2) for k, v in times.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
