"""Speed and scale: recall latency, memorize throughput, open time, memory, disk, peers.

    .venv/bin/python benchmarks/perf.py            # 1k, 10k, 100k episodes over 100 users
    .venv/bin/python benchmarks/perf.py --quick    # 1k only, fewer queries

Writes `benchmarks/results/perf.md`, `perf.json` and PNG plots. Every ratio in the report was
measured in ONE run, with the operations interleaved query by query, so a noisy machine moves
numerator and denominator together.

What is measured, per store size N (episodes spread over 100 users, 20 conversations each):

- `recall` end to end: `await EpisodicMemory.recall(...)` with a conversation id, so both
  sides (same conversation, previous conversations) are searched: query embedding, the hybrid
  plan, the engine, result assembly, and the hop to a worker thread.
- floors, on the same query, in the same loop: the bare embedder (`embed_query`), the bare
  engine answering the SAME rendered batch `EpisodeStore.recall` sends (2 fused requests and
  6 per-stream searches, rendered before the clock starts, sent straight to the Qdrant Edge
  shard or to `QdrantClient.query_batch_points`), and the bare engine answering one minimal
  fused request (3 prefetches + weighted RRF, tenant filter, limit 10).
- the library's own work: `EpisodeStore.recall` with the query vector already known, minus the
  bare engine time for the same request (plan, filters, rendering, assembly, locks).
- memorize throughput with REAL embedding, single `memorize` and `memorize_many`, against the
  bare embedder's throughput on the same texts (interleaved chunk by chunk).

Scale points are loaded with vectors from a pool of real LoCoMo texts embedded once and cached
in `benchmarks/.cache/`, served through `episodex._embedders.cache.VectorCacheEmbedder`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CACHE,
    RESULTS,
    CachedSplade,
    DiskVectorCache,
    KnownQueries,
    dir_size,
    load_locomo,
    machine,
    md_table,
    pct,
    turn_line,
    window,
)
from episodex import EpisodicMemory, SpladeEncoder, default_embedder
from episodex._embedders.base import Embedder
from episodex._embedders.cache import VectorCacheEmbedder
from episodex._engines.collection import tenant_filter
from episodex._engines.plan import Fused, Match, Search, Stream
from episodex._episodes.store import (
    COLLECTION,
    DEFAULT_RRF_K,
    DEFAULT_WEIGHTS,
    LEARNED,
    EpisodeStore,
)

USERS = 100
CONVERSATIONS = 20
AGENT = "bench"
WEIGHTS = DEFAULT_WEIGHTS  # EpisodeStore.recall's defaults
RRF_K = DEFAULT_RRF_K
STAGE1 = 100
PREV_LIMIT = 10
SAME_LIMIT = 5
T0 = datetime(2024, 1, 1, tzinfo=UTC)


# -- the texts ----------------------------------------------------------------------------


def build_pool(
    limit: int | None = None, *, extended: bool = False
) -> tuple[list[tuple[str, str]], list[str]]:
    """(short, long) pairs of real LoCoMo text, and the LoCoMo questions used as queries.

    Short: one turn. Long: the session date and the turn with 1 neighbour each side (and, with
    `extended`, a second set with 2 neighbours each side). Every pair is distinct; `limit` keeps
    the first pairs. 1,557 pairs and 100 users: no user ever gets the same pair twice below
    155,700 episodes, since gcd(100, 1557) = 1.
    """
    convs = load_locomo()
    shorts: list[str] = []
    longs: dict[int, list[str]] = {1: [], 2: []}
    for conv in convs:
        for i, turn in enumerate(conv.turns):
            shorts.append(turn_line(turn))
            for w in (1, 2):
                lines = [turn_line(t) for t in window(conv.turns, i, w, w)]
                longs[w].append(f"{turn.date}\n" + "\n".join(lines))
    pairs = list(zip(shorts, longs[1], strict=True))
    if extended:
        pairs += list(zip(shorts, longs[2], strict=True))
    if limit is not None:
        pairs = pairs[:limit]
    queries = [q.question for c in convs for q in c.questions]
    return pairs, queries


def episode(
    j: int, pool: Sequence[tuple[str, str]], *, conversation: str | None = None
) -> dict[str, Any]:
    short, long = pool[j % len(pool)]
    when = T0 + timedelta(minutes=j)
    return {
        "short_summary": short,
        "long_summary": long,
        "user_id": f"user-{j % USERS:03d}",
        "agent_id": AGENT,
        "conversation_id": conversation or f"conv-{(j // USERS) % CONVERSATIONS:02d}",
        "start_index": j,
        "timestamp_begin": when,
        "timestamp_end": when,
    }


# -- the floors ---------------------------------------------------------------------------


def recall_plan(
    store: EpisodeStore, query: str, dense: list[float], user: str, conv: str
) -> list[Search | Fused]:
    """The batch `EpisodeStore.recall` sends for this query, with its default options."""
    base = tenant_filter(user, AGENT)
    sparse = store.bm25.query(query)
    streams = [Stream("short", dense, STAGE1), Stream("long", dense, STAGE1)]
    if sparse.indices:
        streams.append(Stream("bm25", sparse, STAGE1))
    if store.splade is not None:
        # Encoded before the clock starts: the floor times the engine on the same batch, and
        # the SPLADE query encoder shows as the difference between recall and the floor.
        learned = SpladeEncoder.documents(store.splade, [query])[0]
        if learned.indices:
            streams.extend(Stream(name, learned, STAGE1) for name in LEARNED)
    sides = [
        (base.and_(Match("conversation_id", conv)), SAME_LIMIT),
        (base.and_not(Match("conversation_id", conv)), PREV_LIMIT),
    ]
    requests: list[Search | Fused] = [
        Fused(
            streams=tuple(streams),
            weights=tuple(WEIGHTS[s.using] for s in streams),
            k=RRF_K,
            filter=flt,
            limit=limit,
        )
        for flt, limit in sides
    ]
    for flt, _ in sides:
        requests.extend(
            Search(stream=s, filter=flt, limit=STAGE1, with_payload=False) for s in streams
        )
    return requests


def minimal_plan(
    store: EpisodeStore, query: str, dense: list[float], user: str
) -> list[Search | Fused]:
    """One fused request: three prefetches, weighted RRF, the tenant filter, 10 results."""
    sparse = store.bm25.query(query)
    streams = [Stream("short", dense, STAGE1), Stream("long", dense, STAGE1)]
    if sparse.indices:
        streams.append(Stream("bm25", sparse, STAGE1))
    return [
        Fused(
            streams=tuple(streams),
            weights=tuple(WEIGHTS[s.using] for s in streams),
            k=RRF_K,
            filter=tenant_filter(user, AGENT),
            limit=PREV_LIMIT,
        )
    ]


class BareEngine:
    """Sends pre-rendered requests straight to the engine underneath an `EpisodicMemory`."""

    def __init__(self, mem: EpisodicMemory) -> None:
        self.kind = mem.engine.kind
        if self.kind == "edge":
            from episodex._engines.edge import render_request

            self._render = render_request
            self._shard = mem.engine._shards[COLLECTION]  # the raw qdrant_edge.EdgeShard
        else:
            from episodex._engines.qdrant import render_request as render_qc

            self._render = render_qc
            self._client = mem.engine.client
            self._name = f"episodex_{COLLECTION}"

    def render(self, requests: Sequence[Search | Fused]) -> Any:
        if self.kind == "edge":
            # As the engine sends them: id-only stream searches carry no payload at all.
            rendered = [
                self._render(r, native_ids=isinstance(r, Search) and r.with_payload is False)
                for r in requests
            ]
        else:
            rendered = [self._render(r) for r in requests]
        if self.kind == "edge":
            import qdrant_edge as qe

            return rendered[0] if len(rendered) == 1 else qe.QueryBatchRequest(rendered)
        return rendered

    def run(self, rendered: Any) -> Any:
        if self.kind == "edge":
            import qdrant_edge as qe

            if isinstance(rendered, qe.QueryBatchRequest):
                return self._shard.query_batch(rendered)
            return self._shard.query(rendered)
        return self._client.query_batch_points(self._name, rendered)


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t, out


async def atimed(coro: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = await coro
    return time.perf_counter() - t, out


# -- one backend --------------------------------------------------------------------------


@dataclass
class Backend:
    name: str
    mem: EpisodicMemory
    real: EpisodicMemory  # same engine, real embedder: for throughput
    known: EpisodeStore  # same engine, pre-computed query vectors: for the library's own work
    known_embedder: KnownQueries
    bare: BareEngine
    loaded: int = 0
    path: Path | None = None


def open_backend(
    name: str, cached: VectorCacheEmbedder, real: Embedder, path: Path | None
) -> Backend:
    if name == "edge":
        assert path is not None
        shutil.rmtree(path, ignore_errors=True)
        mem = EpisodicMemory(path=path, embedder=cached, splade=CachedSplade())
    else:
        mem = EpisodicMemory(location=":memory:", embedder=cached, splade=CachedSplade())
    known = KnownQueries(real)
    return Backend(
        name=name,
        mem=mem,
        real=EpisodicMemory(engine=mem.engine, embedder=real),
        known=EpisodeStore(mem.engine, known, splade=mem.store.splade),
        known_embedder=known,
        bare=BareEngine(mem),
        path=path,
    )


async def load(b: Backend, upto: int, pool: Sequence[tuple[str, str]], *, progress: bool) -> float:
    """Memorize episodes `b.loaded .. upto-1` with cached vectors; returns seconds."""
    start = b.loaded
    bar = tqdm(
        total=upto - start, desc=f"load {b.name} to {upto:,}", unit="ep", disable=not progress
    )
    t = time.perf_counter()
    chunk = 2048
    for s in range(start, upto, chunk):
        eps = [episode(j, pool) for j in range(s, min(upto, s + chunk))]
        await b.mem.memorize_many(eps)
        bar.update(len(eps))
    bar.close()
    b.loaded = upto
    return time.perf_counter() - t


def query_set(queries: Sequence[str], n: int) -> list[tuple[str, str, str]]:
    """(query, user, conversation) triples; users and conversations spread evenly."""
    out = []
    for i in range(n):
        q = queries[(i * 37) % len(queries)]
        out.append((q, f"user-{i % USERS:03d}", f"conv-{(i * 7) % CONVERSATIONS:02d}"))
    return out


async def recall_loop(
    backends: Sequence[Backend],
    real: Embedder,
    qs: Sequence[tuple[str, str, str]],
    *,
    peers: Sequence[Any] = (),
    peer_queries: int = 0,
    memory_queries: int | None = None,
    warmup: int = 10,
    progress: bool,
    label: str,
) -> dict[str, list[float]]:
    """Everything timed query by query, interleaved; returns the samples in seconds.

    The steps of one query run in a rotating order (step i first for query i), so none always
    runs right after the embedder (whose ONNX threads keep spinning for a moment) or always
    first; the query vectors for the bare engine are computed before the loop, untimed.
    """
    s: dict[str, list[float]] = {}
    vectors = {q: real.embed_query(q) for q, _, _ in qs}

    def add(key: str, value: float) -> None:
        s.setdefault(key, []).append(value)

    for i, (q, user, conv) in enumerate(tqdm(qs, desc=label, unit="q", disable=not progress)):
        keep = i >= warmup
        vec = vectors[q]
        dense = vec.tolist()
        times: dict[str, float] = {}
        steps: list[tuple[str, Any]] = [("embed", lambda q=q: timed(real.embed_query, q))]
        for b in backends:
            # qdrant-client local mode is slow: one warm-up query, then `memory_queries`.
            if (
                b.name == "memory"
                and memory_queries is not None
                and not (max(0, warmup - 1) <= i < warmup + memory_queries)
            ):
                continue
            b.known_embedder.table[q] = vec
            same = b.bare.render(recall_plan(b.mem.store, q, dense, user, conv))
            mini = b.bare.render(minimal_plan(b.mem.store, q, dense, user))
            kw = {"user_id": user, "agent_id": AGENT, "query": q, "conversation_id": conv}
            steps += [
                (f"{b.name}.engine", lambda b=b, same=same: timed(b.bare.run, same)),
                (f"{b.name}.engine_min", lambda b=b, mini=mini: timed(b.bare.run, mini)),
                (f"{b.name}.no_embed", lambda b=b, kw=kw: timed(b.known.recall, **kw)),
                (f"{b.name}.recall", lambda b=b, kw=kw: atimed(b.mem.recall(**kw))),
            ]
        if max(0, warmup - 1) <= i < peer_queries + warmup:  # peers are slow too: one warm-up
            for peer in peers:
                if peer.name.startswith("LlamaIndex"):
                    steps.append(
                        (f"peer.{peer.name}", lambda p=peer, q=q, u=user: atimed(p.recall(q, u)))
                    )
                else:
                    steps.append(
                        (f"peer.{peer.name}", lambda p=peer, q=q, u=user: timed(p.recall, q, u))
                    )
        r = i % len(steps)
        answers: dict[str, Any] = {}
        for key, step in steps[r:] + steps[:r]:
            out = step()
            if asyncio.iscoroutine(out):
                out = await out
            times[key], answers[key] = out
        if i == 0:
            for b in backends:
                if f"{b.name}.recall" in answers:
                    check_same_answer(b, answers[f"{b.name}.recall"], answers[f"{b.name}.engine"])
        if not keep:
            continue
        for key, value in times.items():
            add(key, value)
        for b in backends:
            if f"{b.name}.engine" in times:
                add(f"{b.name}.floor", times["embed"] + times[f"{b.name}.engine"])
                add(f"{b.name}.floor_min", times["embed"] + times[f"{b.name}.engine_min"])
        for peer in peers:
            if f"peer.{peer.name}" in times:
                add(f"peer.{peer.name}.ours", times[f"{backends[0].name}.recall"])
    return s


def check_same_answer(b: Backend, ours: dict[str, Any], bare: Any) -> None:
    """The floor is only a floor if it is the same request: both must find the same episodes."""
    found = ours["same_conversation"] or ours["previous_conversations"]
    assert found, f"{b.name}: recall found nothing"
    lists = bare if b.bare.kind == "edge" else [r.points for r in bare]
    for side, hits in (("same_conversation", lists[0]), ("previous_conversations", lists[1])):
        # The embedded engine keys points by 64 bits of their UUID and carries the UUID itself
        # in the payload; a server keys them by the UUID.
        want = [(h.payload or {}).get("_episodex_id") or str(h.id) for h in hits]
        got = [item["point_id"] for item in ours[side]]
        if side == "previous_conversations":
            # `conversation_diversity` re-orders this list after the engine, never its members.
            got, want = sorted(got), sorted(want)
        assert got == want, f"{b.name} {side}: recall {got} but the bare engine {want}"


def own_work(
    b: Backend, real: Embedder, qs: Sequence[tuple[str, str, str]], *, reps: int
) -> list[float]:
    """Per query: min over `reps` of recall-with-known-vector minus min of the bare engine."""
    out: list[float] = []
    for q, user, conv in qs:
        vec = b.known_embedder.table.get(q)
        if vec is None:
            vec = b.known_embedder.table[q] = real.embed_query(q)
        same = b.bare.render(recall_plan(b.mem.store, q, vec.tolist(), user, conv))
        known, engine = [], []
        for _ in range(reps):
            engine.append(timed(b.bare.run, same)[0])
            known.append(
                timed(b.known.recall, user_id=user, agent_id=AGENT, query=q, conversation_id=conv)[
                    0
                ]
            )
        out.append(min(known) - min(engine))
    return out


async def throughput(
    b: Backend, pool: Sequence[tuple[str, str]], n_many: int, n_single: int, *, progress: bool
) -> dict[str, float]:
    """Real-embedding memorize throughput vs the bare embedder on the same texts (interleaved)."""
    real = b.real.embedder
    offset = 7919  # texts away from the first pairs (any pair works: ONNX has no cache)
    many = [episode(offset + j, pool, conversation="throughput") for j in range(n_many)]
    single = [
        episode(offset + n_many + j, pool, conversation="throughput") for j in range(n_single)
    ]
    chunk = 128
    t_floor = t_ours = 0.0
    bar = tqdm(
        total=n_many + n_single,
        desc=f"throughput {b.name} @ {b.loaded:,}",
        unit="ep",
        disable=not progress,
    )
    for s in range(0, n_many, chunk):
        eps = many[s : s + chunk]
        texts = [t for e in eps for t in (e["short_summary"], e["long_summary"])]
        dt, _ = timed(real.embed_documents, texts)
        t_floor += dt
        dt, _ = await atimed(b.real.memorize_many(eps, batch_size=chunk))
        t_ours += dt
        bar.update(len(eps))
    ts_floor = ts_ours = 0.0
    for e in single:
        dt, _ = timed(real.embed_documents, [e["short_summary"], e["long_summary"]])
        ts_floor += dt
        dt, _ = await atimed(b.real.memorize(**e))
        ts_ours += dt
        bar.update(1)
    bar.close()
    # Leave the store at exactly `loaded` episodes: drop what this measurement added.
    for u in {e["user_id"] for e in many + single}:
        await b.mem.forget(user_id=u, agent_id=AGENT, conversation_id="throughput")
    return {
        "many_eps": n_many / t_ours,
        "many_floor_eps": n_many / t_floor,
        "many_ratio": t_floor / t_ours,
        "single_eps": n_single / ts_ours,
        "single_floor_eps": n_single / ts_floor,
        "single_ratio": ts_floor / ts_ours,
        "batch": chunk,
    }


# -- open time and memory of a big store (in a fresh process) ------------------------------


def probe_open(path: str, recalls: int = 200) -> dict[str, Any]:
    import psutil

    proc = psutil.Process()
    rss = lambda: proc.memory_info().rss / 2**20  # noqa: E731

    def rss_parts() -> dict[str, float]:
        # Anonymous memory (heap) vs file pages mapped in (reclaimable page cache), from Linux.
        parts: dict[str, float] = {}
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith(("RssAnon:", "RssFile:")):
                    key, value = line.split(":")
                    parts[key] = float(value.split()[0]) / 1024
        except OSError:
            pass
        return parts

    import episodex._engines.edge  # noqa: F401  (map the engine's shared library before measuring)

    base = rss()
    emb = default_embedder()
    texts = ["what did she paint?", *(f"hobby number {i}" for i in range(recalls))]
    for text in texts:  # grow ONNX Runtime's arenas now, so they are not counted as the store's
        emb.embed_query(text)
    model = rss()
    model_parts = rss_parts()
    t = time.perf_counter()
    mem = EpisodicMemory(path=path)
    open_s = time.perf_counter() - t
    opened = rss()

    async def go() -> tuple[float, int]:
        t1 = time.perf_counter()
        await mem.recall(
            user_id="user-001",
            agent_id=AGENT,
            query="what did she paint?",
            conversation_id="conv-01",
        )
        first = time.perf_counter() - t1
        for i in range(recalls):
            await mem.recall(
                user_id=f"user-{i % USERS:03d}",
                agent_id=AGENT,
                query=f"hobby number {i}",
                conversation_id="conv-03",
            )
        n = 0
        for u in range(USERS):
            n += await mem.count(user_id=f"user-{u:03d}", agent_id=AGENT)
        return first, n

    first, count = asyncio.run(go())
    warm = rss()
    warm_parts = rss_parts()
    mem.close()
    return {
        "open_s": open_s,
        "first_recall_s": first,
        "episodes": count,
        "rss_base_mib": base,
        "rss_model_mib": model,
        "rss_open_mib": opened,
        "rss_warm_mib": warm,
        "store_open_mib": opened - model,
        "store_warm_mib": warm - model,
        "store_warm_anon_mib": warm_parts.get("RssAnon", float("nan"))
        - model_parts.get("RssAnon", float("nan")),
        "store_warm_file_mib": warm_parts.get("RssFile", float("nan"))
        - model_parts.get("RssFile", float("nan")),
    }


def run_probe(path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--probe-open", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the run ------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    progress = not args.no_progress
    info = machine()
    real = default_embedder()
    pool, queries = build_pool(args.pool)
    texts = sorted({t for pair in pool for t in pair})
    cache = DiskVectorCache(real.model_id, args.cache)
    todo = cache.missing(texts)
    if todo:
        bar = tqdm(
            total=len(todo),
            desc="embed the text pool once (cached)",
            unit="text",
            disable=not progress,
        )
        cache.fill(real, todo, progress=bar.update)
        bar.close()
    cached = VectorCacheEmbedder(real, cache.table(texts))
    real.embed_query("warm up")

    results: dict[str, Any] = {
        "machine": info,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "pool_pairs": len(pool),
        "sizes": {},
    }
    backends: list[Backend] = []
    store_path = args.cache / "perf-edge-store"
    if "edge" in args.backends:
        backends.append(open_backend("edge", cached, real, store_path))
    if "memory" in args.backends:
        backends.append(open_backend("memory", cached, real, None))

    for size in args.sizes:
        row: dict[str, Any] = {"backends": {}}
        active = [b for b in backends if b.name == "edge" or size <= args.memory_max]
        for b in active:
            added = size - b.loaded
            secs = await load(b, size, pool, progress=progress)
            row["backends"][b.name] = {
                "load_s": secs,
                "load_eps": added / secs if secs else float("nan"),
            }
        qs = query_set(queries, args.queries + args.warmup)
        edge = next((b for b in active if b.name == "edge"), None)
        if edge is not None and edge.path is not None:
            row["backends"]["edge"]["disk_mib_before_optimize"] = dir_size(edge.path) / 2**20
            before_alloc = dir_size(edge.path, allocated=True) / 2**20
            before = await recall_loop(
                [edge],
                real,
                qs[: args.before_queries + args.warmup],
                warmup=args.warmup,
                progress=progress,
                label=f"recall edge @ {size:,} before optimize",
            )
            t, _ = await atimed(edge.mem.optimize())
            row["backends"]["edge"]["optimize_s"] = t
            row["backends"]["edge"]["disk_mib"] = dir_size(edge.path) / 2**20
            row["backends"]["edge"]["disk_alloc_mib_before_optimize"] = before_alloc
            row["backends"]["edge"]["disk_alloc_mib"] = dir_size(edge.path, allocated=True) / 2**20
            row["before_optimize"] = {
                k: {"p50_ms": pct(v, 50) * 1e3, "p95_ms": pct(v, 95) * 1e3}
                for k, v in before.items()
            }
        peers: list[Any] = []
        if size <= args.peer_max and args.peers:
            peers = build_peers(
                args.peers,
                cached,
                backends[0].mem.store.bm25,
                pool,
                size,
                progress=progress,
                row=row,
            )
        # The slow participants (local mode, peers) get fewer timed queries as the store grows.
        peer_q = (
            args.peer_queries
            if size < 10_000
            else args.peer_queries_10k
            if size < 100_000
            else args.peer_queries_100k
        )
        mem_q = args.memory_queries if size < 10_000 else args.memory_queries_10k
        samples = await recall_loop(
            active,
            real,
            qs,
            peers=peers,
            peer_queries=peer_q,
            memory_queries=mem_q,
            warmup=args.warmup,
            progress=progress,
            label=f"recall @ {size:,}",
        )
        for b in active:
            if b.name == "edge":
                samples["edge.own_min"] = own_work(b, real, qs[: args.own_queries], reps=5)
            else:
                samples[f"{b.name}.own_min"] = own_work(b, real, qs[:2], reps=2)
        for peer in peers:
            peer.close()
        del peers
        gc.collect()
        row["latency"] = {
            k: {"p50_ms": pct(v, 50) * 1e3, "p95_ms": pct(v, 95) * 1e3, "n": len(v)}
            for k, v in samples.items()
        }
        for b in active:
            row["backends"][b.name]["throughput"] = await throughput(
                b, pool, args.many, args.single, progress=progress
            )
        results["sizes"][str(size)] = row
        print(
            json.dumps(
                {
                    "size": size,
                    "latency_p50_ms": {k: round(v["p50_ms"], 3) for k, v in row["latency"].items()},
                }
            ),
            flush=True,
        )

    for b in backends:
        b.mem.close()
    if "edge" in args.backends and not args.no_probe:
        results["open_probe"] = open_probe(store_path, max(args.sizes))
    return results


def open_probe(store_path: Path, size: int) -> dict[str, Any]:
    probe = run_probe(store_path)
    probe["size"] = size
    probe["raw_dense_mib"] = size * 2 * 384 * 4 / 2**20
    probe["disk_mib"] = dir_size(store_path) / 2**20
    probe["disk_alloc_mib"] = dir_size(store_path, allocated=True) / 2**20
    return probe


def build_peers(
    names: Sequence[str],
    cached: VectorCacheEmbedder,
    bm25: Any,
    pool: Sequence[tuple[str, str]],
    size: int,
    *,
    progress: bool,
    row: dict[str, Any],
) -> list[Any]:
    from _peers import LangChainPeer, LlamaIndexPeer

    peers: list[Any] = []
    for name in names:
        peer = LlamaIndexPeer(cached) if name == "llamaindex" else LangChainPeer(cached, bm25)
        t = time.perf_counter()
        bar = tqdm(
            total=size, desc=f"load {peer.name} to {size:,}", unit="ep", disable=not progress
        )
        for s in range(0, size, 2048):
            eps = [episode(j, pool) for j in range(s, min(size, s + 2048))]
            # One document per episode: the long summary (it contains the turn itself).
            peer.add([e["long_summary"] for e in eps], [e["user_id"] for e in eps])
            bar.update(len(eps))
        bar.close()
        row.setdefault("peer_load_s", {})[peer.name] = time.perf_counter() - t
        peers.append(peer)
    return peers


# -- the report ---------------------------------------------------------------------------


def report(res: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "perf.json").write_text(json.dumps(res, indent=2, default=str))
    m = res["machine"]
    sizes = [int(s) for s in res["sizes"]]
    lines = [
        "# Performance report",
        "",
        f"Run {m['date']} on {m['cores']} cores ({m['cpu']}), {m['memory_gib']} GiB, Python {m['python']}; "
        f"load average at start {m['load_at_start']} (the machine is shared: compare ratios, "
        "each measured in one interleaved loop, rather than absolute times).",
        f"Store sizes: {', '.join(f'{s:,}' for s in sizes)} episodes over {USERS} users; "
        f"{res['pool_pairs']:,} distinct real (short, long) text pairs from LoCoMo, embedded once.",
        "",
        "## Recall latency (ms)",
        "",
        "`recall` = `await EpisodicMemory.recall(...)` end to end with a conversation id (same + previous "
        "conversations). floor = bare `embed_query` + bare engine on the SAME rendered batch; "
        "minimal floor = bare `embed_query` + one fused request. own work = per query, the "
        "fastest of 5 `EpisodeStore.recall` calls with the query vector known minus the fastest of 5 "
        "bare engine calls on the same batch (minimums remove most of the shared machine's noise).",
        "",
    ]
    rows = []
    for size in sizes:
        lat = res["sizes"][str(size)]["latency"]
        for b in ("edge", "memory"):
            if f"{b}.recall" not in lat:
                continue
            g = lambda k, p="p50_ms", lat=lat, b=b: lat[f"{b}.{k}"][p]  # noqa: E731
            rows.append(
                [
                    f"{size:,}",
                    b,
                    g("recall"),
                    g("recall", "p95_ms"),
                    lat["embed"]["p50_ms"],
                    g("engine"),
                    g("engine_min"),
                    g("floor"),
                    g("floor", "p95_ms"),
                    g("own_min"),
                    g("recall") / g("floor"),
                    g("recall", "p95_ms") / g("floor", "p95_ms"),
                    g("recall", "p95_ms") / g("floor"),
                    g("recall") / g("floor_min"),
                ]
            )
    lines.append(
        md_table(
            [
                "episodes",
                "engine",
                "recall p50",
                "recall p95",
                "embed p50",
                "engine p50 (same batch)",
                "engine p50 (1 fused)",
                "floor p50",
                "floor p95",
                "own work p50",
                "p50 / floor p50",
                "p95 / floor p95",
                "p95 / floor p50",
                "p50 / minimal floor p50",
            ],
            rows,
        )
    )
    lines += [
        "",
        "![recall latency](recall_latency.png)",
        "![where the time goes](recall_breakdown.png)",
        "",
    ]

    before_rows = []
    for size in sizes:
        row = res["sizes"][str(size)]
        if "before_optimize" in row and "edge.recall" in row["before_optimize"]:
            bo = row["before_optimize"]
            be = row["backends"]["edge"]
            before_rows.append(
                [
                    f"{size:,}",
                    bo["edge.recall"]["p50_ms"],
                    row["latency"]["edge.recall"]["p50_ms"],
                    bo["edge.engine"]["p50_ms"],
                    row["latency"]["edge.engine"]["p50_ms"],
                    be["optimize_s"],
                    be["disk_mib_before_optimize"],
                    be["disk_mib"],
                    be.get("disk_alloc_mib_before_optimize", float("nan")),
                    be.get("disk_alloc_mib", float("nan")),
                ]
            )
    if before_rows:
        lines += [
            "## Qdrant Edge before and after `optimize()`",
            "",
            "After the bulk load the embedded store is measured as loaded, then `await mem.optimize()` "
            "builds its HNSW indexes and merges segments; every other table is after optimize.",
            "",
            md_table(
                [
                    "episodes",
                    "recall p50 before",
                    "recall p50 after",
                    "engine p50 before",
                    "engine p50 after",
                    "optimize s",
                    "disk MiB before (apparent)",
                    "disk MiB after (apparent)",
                    "disk MiB before (allocated)",
                    "disk MiB after (allocated)",
                ],
                before_rows,
            ),
            "",
            "Apparent size counts preallocated, still-empty file space (Qdrant preallocates its WAL "
            "and mmap files); allocated size is what `du` reports.",
            "",
        ]

    tp_rows = []
    for size in sizes:
        for b, v in res["sizes"][str(size)]["backends"].items():
            t = v["throughput"]
            tp_rows.append(
                [
                    f"{size:,}",
                    b,
                    t["many_eps"],
                    t["many_floor_eps"],
                    t["many_ratio"],
                    t["single_eps"],
                    t["single_floor_eps"],
                    t["single_ratio"],
                    v["load_s"],
                ]
            )
    lines += [
        "## Memorize throughput (episodes/s, real embedding of 2 texts per episode)",
        "",
        "floor = the bare embedder's `embed_documents` on the same texts (the same batches for "
        "`memorize_many`, one pair per call for `memorize`), interleaved with ours.",
        "",
        md_table(
            [
                "episodes in store",
                "engine",
                "memorize_many",
                "floor",
                "ratio",
                "memorize",
                "floor",
                "ratio",
                "bulk load s (cached vectors)",
            ],
            tp_rows,
        ),
        "",
        "![throughput](throughput.png)",
        "",
    ]

    peer_rows = []
    for size in sizes:
        lat = res["sizes"][str(size)]["latency"]
        for k, v in lat.items():
            if k.startswith("peer.") and not k.endswith(".ours"):
                ours = lat[f"{k}.ours"]
                peer_rows.append(
                    [
                        f"{size:,}",
                        k[5:],
                        v["p50_ms"],
                        v["p95_ms"],
                        ours["p50_ms"],
                        v["p50_ms"] / ours["p50_ms"],
                        v["n"],
                    ]
                )
    if peer_rows:
        lines += [
            "## Peers on the same texts and the same embedder",
            "",
            "ratio = peer p50 / episodex (Qdrant Edge) recall p50, measured on the same queries in "
            "the same loop. Peers return 10 documents for the user; episodex returns 5 + 10 "
            "(same and previous conversations) and the per-stream ranks of each.",
            "",
            md_table(
                [
                    "episodes",
                    "peer",
                    "peer p50 ms",
                    "peer p95 ms",
                    "episodex p50 ms",
                    "peer / episodex",
                    "queries",
                ],
                peer_rows,
            ),
            "",
        ]

    probe = res.get("open_probe")
    if probe:
        lines += [
            f"## Opening a {probe['size']:,}-episode embedded store (fresh process)",
            "",
            md_table(
                [
                    "open s",
                    "first recall s",
                    "store RSS MiB right after open",
                    "store RSS MiB after 200 recalls",
                    "raw dense vectors MiB (2 x 384 float32)",
                    "RSS after recalls / raw",
                    "disk MiB (allocated)",
                    "disk MiB (apparent)",
                    "episodes counted",
                ],
                [
                    [
                        probe["open_s"],
                        probe["first_recall_s"],
                        probe["store_open_mib"],
                        probe["store_warm_mib"],
                        probe["raw_dense_mib"],
                        probe["store_warm_mib"] / probe["raw_dense_mib"],
                        probe.get("disk_alloc_mib", float("nan")),
                        probe["disk_mib"],
                        probe["episodes"],
                    ]
                ],
            ),
            "",
            f"Of the {probe['store_warm_mib']:.0f} MiB after recalls, "
            f"{probe.get('store_warm_anon_mib', float('nan')):.0f} MiB are anonymous memory (heap: "
            f"vectors, indexes) and {probe.get('store_warm_file_mib', float('nan')):.0f} MiB are file "
            "pages mapped from the store folder (page cache the kernel can drop under pressure).",
            "",
            "The store's RSS is the process RSS minus the RSS once the embedding model is loaded and "
            "has embedded every probe query (so ONNX Runtime's arenas are not counted; the model "
            f"alone takes {probe['rss_model_mib'] - probe['rss_base_mib']:.0f} MiB). The issue's "
            f"yardstick, 3 x 384 float32 per episode, is {size_gb(probe['size'])} MiB.",
            "",
        ]
    (out / "perf.md").write_text("\n".join(lines) + "\n")
    plots(res, out)


def size_gb(size: int) -> str:
    return f"{size * 3 * 384 * 4 / 2**20:,.0f}"


def plots(res: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [int(s) for s in res["sizes"]]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    series: dict[str, tuple[list[int], list[float]]] = {}
    for size in sizes:
        lat = res["sizes"][str(size)]["latency"]
        for k, label in (
            ("edge.recall", "episodex recall (Qdrant Edge)"),
            ("memory.recall", "episodex recall (qdrant-client :memory:)"),
            ("edge.floor", "floor: embed + engine, same batch (Edge)"),
            ("edge.floor_min", "floor: embed + 1 fused request (Edge)"),
            ("embed", "bare embed_query"),
        ):
            if k in lat:
                series.setdefault(label, ([], []))[0].append(size)
                series[label][1].append(lat[k]["p50_ms"])
        for k, v in lat.items():
            if k.startswith("peer.") and not k.endswith(".ours"):
                series.setdefault(k[5:], ([], []))[0].append(size)
                series[k[5:]][1].append(v["p50_ms"])
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("episodes in the store (100 users)")
    ax.set_ylabel("p50 latency, ms (log)")
    ax.set_title("Recall latency")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "recall_latency.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    labels, embed, engine, own, rest = [], [], [], [], []
    for size in sizes:
        lat = res["sizes"][str(size)]["latency"]
        for b in (
            "edge",
        ):  # local mode is two orders of magnitude slower: it would flatten the plot
            if f"{b}.recall" not in lat:
                continue
            labels.append(f"Qdrant Edge\n{size:,} episodes")
            e, g, o, r = (
                lat["embed"]["p50_ms"],
                lat[f"{b}.engine"]["p50_ms"],
                lat[f"{b}.own_min"]["p50_ms"],
                lat[f"{b}.recall"]["p50_ms"],
            )
            embed.append(e)
            engine.append(g)
            own.append(max(o, 0))
            rest.append(max(r - e - g - max(o, 0), 0))
    x = np.arange(len(labels))
    bottom = np.zeros(len(labels))
    for vals, name in (
        (embed, "query embedding"),
        (engine, "engine (same batch)"),
        (own, "library own work"),
        (rest, "rest (thread hop, noise)"),
    ):
        ax.bar(x, vals, bottom=bottom, label=name)
        bottom += np.asarray(vals)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("p50 ms")
    ax.set_title("Where a recall's time goes (p50 of each part)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "recall_breakdown.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    labels, vals, floors = [], [], []
    for size in sizes:
        for b, v in res["sizes"][str(size)]["backends"].items():
            t = v["throughput"]
            for kind in ("many", "single"):
                labels.append(f"{b} {kind}\n{size:,}")
                vals.append(t[f"{kind}_eps"])
                floors.append(t[f"{kind}_floor_eps"])
    x = np.arange(len(labels))
    ax.bar(x - 0.2, floors, 0.4, label="bare embedder (floor)")
    ax.bar(x + 0.2, vals, 0.4, label="episodex memorize")
    ax.set_xticks(x, labels, fontsize=6)
    ax.set_ylabel("episodes / s")
    ax.set_title("Memorize throughput with real embedding")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1k episodes, fewer queries and episodes")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None)
    p.add_argument(
        "--queries", type=int, default=None, help="timed recalls per size (after 10 warm-up)"
    )
    p.add_argument("--warmup", type=int, default=10, help="untimed recalls before each timed loop")
    p.add_argument("--before-queries", type=int, default=None, help="recalls timed before optimize")
    p.add_argument("--peer-queries", type=int, default=None, help="recalls timed per peer")
    p.add_argument("--peer-queries-10k", type=int, default=20, help="per peer at 10k and more")
    p.add_argument("--peer-queries-100k", type=int, default=5, help="per peer at 100k and more")
    p.add_argument(
        "--memory-queries-10k", type=int, default=5, help="in :memory: mode at 10k and more"
    )
    p.add_argument(
        "--memory-queries", type=int, default=None, help="recalls timed in :memory: mode"
    )
    p.add_argument(
        "--own-queries", type=int, default=None, help="queries for the own-work min-of-5"
    )
    p.add_argument("--many", type=int, default=None, help="episodes for memorize_many throughput")
    p.add_argument(
        "--single", type=int, default=None, help="episodes for single memorize throughput"
    )
    p.add_argument("--backends", default="edge,memory")
    p.add_argument("--peers", default="llamaindex,langchain", help="comma list; empty for none")
    p.add_argument("--peer-max", type=int, default=100_000, help="largest size the peers run at")
    p.add_argument("--memory-max", type=int, default=10_000, help="largest size for :memory: mode")
    p.add_argument("--pool", type=int, default=None, help="use only the first N text pairs")
    p.add_argument("--cache", type=Path, default=CACHE)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-probe", action="store_true", help="skip the open-time/RSS probe")
    p.add_argument("--probe-open", default=None, help=argparse.SUPPRESS)
    p.add_argument("--report-only", action="store_true", help="rewrite the report from perf.json")
    p.add_argument(
        "--probe-only",
        action="store_true",
        help="re-measure open time and memory on the last run's store; rewrite the report",
    )
    a = p.parse_args(argv)
    quick = a.quick
    a.sizes = a.sizes or ([1000] if quick else [1000, 10_000, 100_000])
    a.queries = a.queries if a.queries is not None else (60 if quick else 200)
    a.before_queries = a.before_queries if a.before_queries is not None else (20 if quick else 50)
    a.peer_queries = a.peer_queries if a.peer_queries is not None else (20 if quick else 50)
    a.memory_queries = a.memory_queries if a.memory_queries is not None else (10 if quick else 20)
    a.own_queries = a.own_queries if a.own_queries is not None else (20 if quick else 50)
    a.many = a.many if a.many is not None else (32 if quick else 128)
    a.single = a.single if a.single is not None else (8 if quick else 32)
    a.backends = [x for x in a.backends.split(",") if x]
    a.peers = [x for x in a.peers.split(",") if x]
    return a


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.probe_open:
        print(json.dumps(probe_open(args.probe_open)))
        return {}
    if args.report_only:
        res = json.loads((args.out / "perf.json").read_text())
        report(res, args.out)
        return res
    if args.probe_only:
        # Re-measure open time and memory on the last run's store, and rewrite the report.
        res = json.loads((args.out / "perf.json").read_text())
        sizes = [int(x) for x in res["sizes"]]
        res["open_probe"] = open_probe(args.cache / "perf-edge-store", max(sizes))
        res["open_probe"]["remeasured"] = machine()["date"]
        report(res, args.out)
        print(json.dumps(res["open_probe"]))
        return res
    t = time.perf_counter()
    res = asyncio.run(run(args))
    res["wall_s"] = time.perf_counter() - t
    report(res, args.out)
    print(f"wrote {args.out / 'perf.md'} in {res['wall_s']:.0f} s")
    return res


if __name__ == "__main__":
    main()
