"""What the `dated` stream costs a recall at 100k: the same questions with and without a period.

    .venv/bin/python benchmarks/dated_cost.py benchmarks/.cache/perf-edge-store

Uses a store `perf.py` built (100 users, 20 conversations each; episodes one minute apart from
1 January 2024, so "in February 2024" holds about 40% of each user's episodes). Each LoCoMo
question is recalled four ways, rotated, with a conversation id: as asked; with " in February
2024" appended (a dated stream with many episodes); the same with `dated_weight=0`; with " in
May 2023" (a period without episodes). Prints the p50 of each over the last 220 of 240 rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_breakdown import questions

VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("as asked", "", {}),
    ("in February 2024 (dated)", " in February 2024", {}),
    ("in February 2024, dated_weight=0", " in February 2024", {"dated_weight": 0.0}),
    ("in May 2023 (no episodes)", " in May 2023", {}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--rounds", type=int, default=240)
    args = ap.parse_args()

    from episodex import EpisodicMemory

    qs = questions()
    mem = EpisodicMemory(path=args.store)
    times: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
    for i in range(args.rounds):
        query = qs[(i * 37) % len(qs)].rstrip("?")
        order = VARIANTS[i % 4 :] + VARIANTS[: i % 4]
        for name, suffix, options in order:
            start = time.perf_counter()
            mem.store.recall(
                user_id=f"user-{i % 100:03d}",
                agent_id="bench",
                query=query + suffix,
                conversation_id=f"conv-{(i * 7) % 20:02d}",
                **options,
            )
            times[name].append((time.perf_counter() - start) * 1000)
    mem.close()
    print(json.dumps({k: round(statistics.median(v[20:]), 2) for k, v in times.items()}))


if __name__ == "__main__":
    main()
