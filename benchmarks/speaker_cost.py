"""What the speaker streams and conversation diversity cost a recall at 100k.

    .venv/bin/python benchmarks/speaker_cost.py <copy of a perf.py store> --add-speakers
    .venv/bin/python benchmarks/speaker_cost.py <that copy>

A `perf.py` store holds LoCoMo texts (`Speaker: text`) stored without `speakers`.
`--add-speakers` first gives every episode of the folder (change a copy) the speaker its short
summary starts with, as `memorize` would have stored it, then optimizes the store; opening it
with this release adds the speaker index. Then each LoCoMo question is recalled four ways,
rotated, with a conversation id (both sides): the default; without the speaker streams; without
conversation diversity; without either (the eighth pass's default). Nearly every question names
a speaker, and every user's episodes hold the six speakers of the dev split. Prints the p50 and
p95 of each over all rounds but the first 20.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_locomo

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "no speaker streams": {"speaker_weight": 0, "speaker_bm25_weight": 0},
    "no diversity": {"conversation_diversity": 0},
    "neither (eighth pass)": {
        "speaker_weight": 0,
        "speaker_bm25_weight": 0,
        "conversation_diversity": 0,
    },
}


def add_speakers(path: str) -> None:
    """Store each episode's speaker (`Speaker: text`) in its payload, in place."""
    import qdrant_edge as qe
    from episodex import EpisodicMemory
    from episodex._episodes.model import speaker_keys

    mem = EpisodicMemory(path=path)  # adds the speaker index
    shard: Any = mem.store.engine._shards["episodes"]  # type: ignore[attr-defined]
    groups: defaultdict[str, list[Any]] = defaultdict(list)
    offset = None
    while True:
        records, offset = shard.scroll(
            qe.ScrollRequest(
                offset=offset,
                limit=5000,
                with_payload=qe.PayloadSelector.Include(["short_summary_text"]),
                with_vector=False,
            )
        )
        for r in records:
            head, sep, _ = r.payload["short_summary_text"].partition(":")
            if sep and len(head) < 40:
                groups[head].append(r.id)
        if offset is None:
            break
    for name, ids in groups.items():
        for i in range(0, len(ids), 2000):
            payload = {"speakers": [name], "speaker_keys": speaker_keys([name])}
            shard.update(qe.UpdateOperation.set_payload(ids[i : i + 2000], payload))
    shard.flush()
    print({name: len(ids) for name, ids in groups.items()})
    asyncio.run(mem.optimize())
    mem.close()


async def measure(path: str, rounds: int) -> None:
    from episodex import EpisodicMemory

    questions = [q.question for conv in load_locomo() for q in conv.questions]
    mem = EpisodicMemory(path=path)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for i in range(rounds):
        kwargs = {
            "user_id": f"user-{i % 100:03d}",
            "agent_id": "bench",
            "query": questions[(i * 37) % len(questions)],
            "conversation_id": f"conv-{(i * 7) % 20:02d}",
        }
        for name in names[i % 4 :] + names[: i % 4]:
            start = time.perf_counter()
            await mem.recall(**kwargs, **VARIANTS[name])
            times[name].append((time.perf_counter() - start) * 1000)
    mem.close()
    for name, ms in times.items():
        kept = sorted(ms[20:])
        print(
            f"{name:24s} p50 {statistics.median(kept):6.2f} ms  "
            f"p95 {kept[int(len(kept) * 0.95)]:6.2f} ms"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--add-speakers", action="store_true")
    args = ap.parse_args()
    if args.add_speakers:
        add_speakers(args.store)
    asyncio.run(measure(args.store, args.rounds))


if __name__ == "__main__":
    main()
