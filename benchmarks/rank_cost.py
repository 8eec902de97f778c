"""What the per-stream ranks cost: recall with and without them, on the 100k store of perf.py.

    .venv/bin/python benchmarks/rank_cost.py            # after a full `benchmarks/perf.py` run

Opens the embedded store that `perf.py` left in `benchmarks/.cache/perf-edge-store` (100,000
episodes over 100 users), embeds every query once beforehand, and then, in one interleaved loop,
times per query:

- `EpisodeStore.recall` with `with_stream_ranks=True` (the default) and `False`;
- the bare engine answering the same batches, rendered beforehand (the floors of both);

so "own work" = recall minus its bare batch, with and without ranks. Writes
`results/rank_cost.md`.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from _common import CACHE, RESULTS, KnownQueries, load_locomo, machine
from episodex import EpisodicMemory, default_embedder
from episodex._engines.base import stream_searches
from episodex._engines.collection import tenant_filter
from episodex._engines.edge import render_request
from episodex._engines.plan import Filter, Fused, Match, Stream
from episodex._episodes.store import COLLECTION

WEIGHTS = {"short": 0.15, "long": 0.15, "bm25": 0.7}


def _fused(store: Any, query: str, user: str, agent: str, conv: str) -> list[Fused]:
    dense = store.embedder.embed_query(query).tolist()
    sparse = store.bm25.query(query)
    streams = [Stream("short", dense, 100), Stream("long", dense, 100)]
    if sparse.indices:
        streams.append(Stream("bm25", sparse, 100))
    base = tenant_filter(user, agent)
    sides: list[tuple[Filter, int]] = [
        (base.and_(Match("conversation_id", conv)), 5),
        (base.and_not(Match("conversation_id", conv)), 10),
    ]
    weights = tuple(WEIGHTS[s.using] for s in streams)
    return [
        Fused(streams=tuple(streams), weights=weights, k=10, filter=f, limit=n) for f, n in sides
    ]


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=CACHE / "perf-edge-store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="fastest of N per query")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    questions = [q.question for c in load_locomo() for q in c.questions][: args.queries]
    real = default_embedder()
    embedder = KnownQueries(real, {q: real.embed_query(q) for q in questions})
    mem = EpisodicMemory(path=args.store, embedder=embedder)
    store = mem.store
    shard = mem.engine._shards[COLLECTION]  # type: ignore[attr-defined]
    hits, _ = mem.engine.scroll(COLLECTION, Filter(), limit=1)
    agent = hits[0].payload["agent_id"]
    rows: dict[str, list[float]] = {k: [] for k in ("ranks", "lean", "engine_ranks", "engine_lean")}
    for i, query in enumerate(questions):
        user = f"user-{i % 100:03d}"
        conv = f"conv-{(i * 7) % 20:02d}"
        fused = _fused(store, query, user, agent, conv)
        full_batch = qe.QueryBatchRequest(
            [render_request(r) for r in fused]
            + [render_request(r, native_ids=True) for r in stream_searches(fused)]
        )
        lean_batch = qe.QueryBatchRequest([render_request(r) for r in fused])
        kwargs = {"user_id": user, "agent_id": agent, "conversation_id": conv, "query": query}
        # Called at once by _best, so binding the loop's current values is what is meant.
        rows["ranks"].append(_best(functools.partial(store.recall, **kwargs), args.repeat))
        rows["lean"].append(
            _best(functools.partial(store.recall, **kwargs, with_stream_ranks=False), args.repeat)
        )
        rows["engine_ranks"].append(
            _best(functools.partial(shard.query_batch, full_batch), args.repeat)
        )
        rows["engine_lean"].append(
            _best(functools.partial(shard.query_batch, lean_batch), args.repeat)
        )
    n_episodes = mem.engine.count(COLLECTION, Filter())
    mem.close()

    p50 = {k: statistics.median(v) * 1000 for k, v in rows.items()}
    own = {
        "ranks": statistics.median(
            a - b for a, b in zip(rows["ranks"], rows["engine_ranks"], strict=True)
        )
        * 1000,
        "lean": statistics.median(
            a - b for a, b in zip(rows["lean"], rows["engine_lean"], strict=True)
        )
        * 1000,
    }
    m = machine()
    lines = [
        "# The cost of per-stream ranks (Qdrant Edge)",
        "",
        f"{n_episodes:,} episodes. Run {m['date']} on {m['cores']} cores ({m['cpu']}); {len(questions)} LoCoMo questions, query "
        f"vectors computed beforehand (no embedding in these times), fastest of {args.repeat} per query.",
        "",
        "| recall | `EpisodeStore.recall` p50 ms | bare engine, same batch p50 ms | own work p50 ms |",
        "|---|---|---|---|",
        f"| with stream ranks (default: 2 fused + 6 id-only searches) | {p50['ranks']:.2f} | "
        f"{p50['engine_ranks']:.2f} | {own['ranks']:.2f} |",
        f"| `with_stream_ranks=False` (2 fused requests) | {p50['lean']:.2f} | {p50['engine_lean']:.2f} | "
        f"{own['lean']:.2f} |",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rank_cost.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return {"p50_ms": p50, "own_ms": own, "queries": len(questions)}


if __name__ == "__main__":
    main()
