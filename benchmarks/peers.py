"""Issue 17: episodex against the peers users pick, speed and recall quality on the same work.

    python3 dev.py bench peers                    # installs the `peers` group, then runs this
    .venv/bin/python benchmarks/peers.py --sizes 1000,10000 --peers chroma,lancedb

Every peer gets the same texts (one document per episode: its long summary, the LoCoMo turn
with its date and one neighbour each side), the same embedder (`SharedVectors`: cached document
vectors; queries embedded for real, or known beforehand for the "no embedding" figures), is
filtered to the user and asked for 10 results. episodex stores its episodes as usual (short +
long summary, BM25) and recalls with its defaults, 10 results for the user.

Each (peer, size) runs in a fresh process: build (timed: write throughput), then for a store
on disk a second fresh process opens it (open time, RSS, disk); both run the recall loop, end to
end and with known query vectors alternating query by query. Recall quality on the LoCoMo dev
split runs in one more process per peer. Writes `results/peers.md`, `peers.json`, `peers.png`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The documented switches that keep Chroma and mem0 from phoning home (telemetry).
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("MEM0_TELEMETRY", "False")

import psutil
from _common import (
    CACHE,
    RESULTS,
    CachedSplade,
    DiskVectorCache,
    dir_size,
    load_locomo,
    machine,
    md_table,
    pct,
)
from _peers import (
    ChromaPeer,
    LanceDBPeer,
    LangGraphPeer,
    LlamaBlockPeer,
    Mem0Peer,
    Peer,
    QdrantHybridPeer,
    SharedVectors,
)
from episodex import EpisodicMemory, default_embedder
from episodex._engines.sparse import Bm25Encoder

HERE = Path(__file__).resolve().parent
USERS = 100
AGENT = "bench"
PEERS = [
    "episodex",
    "episodex_store",
    "llamaindex",
    "qdrant",
    "mem0",
    "chroma",
    "lancedb",
    "langgraph",
]
# C++/Rust ANN engines (the "within 1.2x of the fastest" target); the rest are Python searches.
NATIVE = {"episodex", "episodex_store", "chroma", "lancedb"}


class KnownSplade(CachedSplade):
    """The SPLADE encoder, with query vectors looked up when the shared embedder's are.

    episodex encodes each query twice (dense and SPLADE); the "no embed" columns must leave
    out both model runs, or they time a model run the peers never make. Stored texts are
    encoded once each (`CachedSplade`), as the shared embedder caches their dense vectors, so
    a 100k store builds in minutes.
    """

    def __init__(self, shared: Any) -> None:
        super().__init__()
        self._shared = shared
        self._known: dict[str, Any] = {}

    def prepare(self, queries: Sequence[str]) -> None:
        self._known |= {q: CachedSplade.query(self, q) for q in queries if q not in self._known}

    def query(self, text: str) -> Any:
        if self._shared.known_queries and text in self._known:
            return self._known[text]
        return super().query(text)


class EpisodexPeer(Peer):
    """episodex on the embedded default (Qdrant Edge), recall with its defaults, 10 results."""

    name = "episodex (Qdrant Edge)"
    persistent = True

    def __init__(self, embedder: Any, folder: Path) -> None:
        self._emb = embedder
        self._folder = folder
        self.shorts: dict[str, str] = {}
        self.splade = KnownSplade(embedder)
        self.reopen()

    def reopen(self) -> None:
        self.mem = EpisodicMemory(path=self._folder, embedder=self._emb, splade=self.splade)

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        eps = [
            {
                "short_summary": self.shorts.get(i, t),
                "long_summary": t,
                "user_id": u,
                "agent_id": AGENT,
                "conversation_id": "c",
                "metadata": {"ours": i},
            }
            for i, t, u in zip(ids, texts, users, strict=True)
        ]
        self.mem.store.memorize_many(eps)

    def finish(self) -> None:
        self.mem.store.engine.optimize()  # the README's advice after a bulk import

    async def recall(self, query: str, user: str) -> list[str]:
        res = await self.mem.recall(
            user_id=user,
            agent_id=AGENT,
            query=query,
            previous_conversation_limit=10,
            same_conversation_limit=0,
        )
        return [it["metadata"]["ours"] for it in res["previous_conversations"]]

    def close(self) -> None:
        self.mem.close()


class EpisodexStorePeer(Peer):
    """Our own LangGraph store, `langchain_episodex.EpisodexStore`, on the embedded engine.

    Set up as its docstring shows (one namespace a user, `index={"fields": ["text"]}`); its
    search is episodex's dense + BM25 hybrid fused in the engine (no SPLADE: items are not
    episodes). Items go in with LangGraph's `batch` of `PutOp`s.
    """

    name = "EpisodexStore (LangGraph)"
    persistent = True

    def __init__(self, embedder: Any, folder: Path) -> None:
        self._emb = embedder
        self._folder = folder
        self.reopen()

    def reopen(self) -> None:
        from langchain_episodex import EpisodexStore

        self.mem = EpisodicMemory(path=self._folder, embedder=self._emb, splade=False)
        self.store = EpisodexStore(self.mem, agent_id=AGENT, index={"fields": ["text"]})

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        from langgraph.store.base import PutOp

        self.store.batch(
            [
                PutOp((u, "memories"), i, {"text": t})
                for i, t, u in zip(ids, texts, users, strict=True)
            ]
        )

    def finish(self) -> None:
        self.mem.store.engine.optimize()

    def recall(self, query: str, user: str) -> list[str]:
        return [it.key for it in self.store.search((user, "memories"), query=query, limit=10)]

    def close(self) -> None:
        self.mem.close()


def make_peer(key: str, emb: SharedVectors, folder: Path) -> Peer:
    if key == "episodex":
        return EpisodexPeer(emb, folder)
    if key == "episodex_store":
        return EpisodexStorePeer(emb, folder)
    if key == "llamaindex":
        return LlamaBlockPeer(emb)
    if key == "qdrant":
        return QdrantHybridPeer(emb, Bm25Encoder())
    if key == "mem0":
        return Mem0Peer(emb, folder)
    if key == "chroma":
        return ChromaPeer(emb, folder)
    if key == "lancedb":
        return LanceDBPeer(emb, folder)
    if key == "langgraph":
        return LangGraphPeer(emb, folder)
    raise ValueError(key)


# -- the texts ----------------------------------------------------------------------------


def shared_vectors(
    cache: Path, pool_limit: int | None = None
) -> tuple[SharedVectors, list[tuple[str, str]], list[str]]:
    from perf import build_pool

    pool, queries = build_pool(pool_limit)
    if pool_limit is not None:
        queries = queries[:pool_limit]
    real = default_embedder()
    docs = DiskVectorCache(real.model_id, cache)
    texts = sorted({t for p in pool for t in p})
    docs.fill(real, texts)
    qc = DiskVectorCache(f"query-{real.model_id}", cache)
    missing = qc.missing(queries)
    if missing:

        class _AsQuery:
            def embed_documents(self, batch: Sequence[str]) -> Any:
                import numpy as np

                return np.stack([real.embed_query(t) for t in batch])

        qc.fill(_AsQuery(), missing, batch=64)  # type: ignore[arg-type]
    emb = SharedVectors(real, docs.table(texts), qc.table(sorted(set(queries))))
    real.embed_query("warm up")
    return emb, pool, queries


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


async def maybe(x: Any) -> Any:
    return await x if inspect.isawaitable(x) else x


# -- workers (one fresh process each) -----------------------------------------------------


async def recall_loop(
    peer: Peer, emb: SharedVectors, queries: Sequence[str], n: int, warmup: int
) -> dict[str, list[float]]:
    """End to end and with known query vectors, alternating which goes first, query by query."""
    out: dict[str, list[float]] = {"e2e": [], "known": []}
    for i in range(n + warmup):
        q = queries[(i * 37) % len(queries)]  # KnownSplade.prepare repeats this choice
        user = f"user-{i % USERS:03d}"
        order = ("e2e", "known") if i % 2 == 0 else ("known", "e2e")
        for mode in order:
            emb.known_queries = mode == "known"
            t = time.perf_counter()
            ids = await maybe(peer.recall(q, user))
            dt = time.perf_counter() - t
            if i >= warmup:
                out[mode].append(dt)
            assert isinstance(ids, list)
    emb.known_queries = False
    return out


PRELOAD = {
    "chroma": ["langchain_chroma", "chromadb"],
    "lancedb": ["lancedb"],
    "mem0": ["mem0"],
    "langgraph": ["langgraph.store.memory"],
    "episodex_store": ["langchain_episodex", "langgraph.store.base"],
}


async def worker_size(args: argparse.Namespace) -> dict[str, Any]:
    import importlib

    for mod in PRELOAD.get(args.peer, []):  # open times exclude the import, as for episodex
        importlib.import_module(mod)
    emb, pool, queries = shared_vectors(args.cache, args.pool)
    folder = Path(args.folder)
    res: dict[str, Any] = {"peer": args.peer, "size": args.size}
    gc.collect()
    base = rss_mib()
    if args.phase in ("build", "all"):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        t = time.perf_counter()
        peer = make_peer(args.peer, emb, folder)
        res["create_s"] = time.perf_counter() - t
        if isinstance(peer, EpisodexPeer):
            peer.shorts = {str(j): pool[j % len(pool)][0] for j in range(args.size)}
        t = time.perf_counter()
        step = 2048
        for s in range(0, args.size, step):
            js = range(s, min(args.size, s + step))
            peer.add(
                [str(j) for j in js],
                [pool[j % len(pool)][1] for j in js],
                [f"user-{j % USERS:03d}" for j in js],
            )
        t_add = time.perf_counter() - t
        t = time.perf_counter()
        peer.finish()
        t_fin = time.perf_counter() - t
        res |= {"add_s": t_add, "finish_s": t_fin, "write_dps": args.size / (t_add + t_fin)}
        if args.phase == "build":
            peer.close()
            return res
    else:
        t = time.perf_counter()
        peer = make_peer(args.peer, emb, folder)
        res["open_s"] = time.perf_counter() - t
    t = time.perf_counter()
    await maybe(peer.recall(queries[0], "user-000"))
    res["first_recall_s"] = time.perf_counter() - t
    if isinstance(peer, EpisodexPeer):
        n = args.queries + args.warmup
        peer.splade.prepare([queries[(i * 37) % len(queries)] for i in range(n)])
    lat = await recall_loop(peer, emb, queries, args.queries, args.warmup)
    gc.collect()
    res["rss_mib"] = rss_mib() - base
    res["latency"] = {
        k: {"p50_ms": pct(v, 50) * 1e3, "p95_ms": pct(v, 95) * 1e3, "n": len(v)}
        for k, v in lat.items()
    }
    if peer.persistent:
        res["disk_mib"] = dir_size(folder, allocated=True) / 2**20
    peer.close()
    return res


def score(ranked: Sequence[str], evidence: Sequence[str]) -> tuple[float, float]:
    ev = set(evidence)
    return float(bool(ev & set(ranked[:5]))), float(bool(ev & set(ranked[:10])))


async def worker_quality(args: argparse.Namespace) -> dict[str, Any]:
    import recall_quality as rq

    emb, _, _ = shared_vectors(args.cache)
    emb.known_queries = True  # quality does not depend on who embeds the question
    convs = load_locomo()
    folder = Path(args.folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    peer = make_peer(args.peer, emb, folder)
    for conv in convs:
        pairs = [rq.DEFAULT_RECIPE.summaries(conv.turns, i) for i in range(len(conv.turns))]
        # Turn ids (`D1:3`) repeat in every conversation; a store keyed by id (Chroma upserts)
        # would let each conversation overwrite the last one's turns, so ids name the
        # conversation too.
        ids = [f"{conv.name}|{t.dia_id}" for t in conv.turns]
        if isinstance(peer, EpisodexPeer):
            peer.shorts |= {i: p[0] for i, p in zip(ids, pairs, strict=True)}
        peer.add(ids, [p[1] for p in pairs], [conv.name] * len(ids))
    peer.finish()
    at5: list[float] = []
    at10: list[float] = []
    for conv in convs:
        for q in conv.questions:
            if q.category not in rq.CATEGORIES or not q.evidence:
                continue
            ranked = await maybe(peer.recall(q.question, conv.name))
            a, b = score([r.split("|", 1)[-1] for r in ranked], q.evidence)
            at5.append(a)
            at10.append(b)
    peer.close()
    return {
        "peer": args.peer,
        "questions": len(at5),
        "turn_any@5": sum(at5) / len(at5),
        "turn_any@10": sum(at10) / len(at10),
    }


# -- the orchestrator ---------------------------------------------------------------------


def run_worker(argv: list[str], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-3:]
        return {"error": " / ".join(tail)[-600:] or f"exit code {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def peer_name(key: str) -> str:
    return {
        "episodex": EpisodexPeer.name,
        "episodex_store": EpisodexStorePeer.name,
        "llamaindex": LlamaBlockPeer.name,
        "qdrant": QdrantHybridPeer.name,
        "mem0": Mem0Peer.name,
        "chroma": ChromaPeer.name,
        "lancedb": LanceDBPeer.name,
        "langgraph": LangGraphPeer.name,
    }[key]


def persistent(key: str) -> bool:
    return key in {"episodex", "episodex_store", "chroma", "lancedb"}


def orchestrate(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"machine": machine(), "sizes": {}, "quality": {}, "skipped": {}}
    sizes = [int(s) for s in args.sizes.split(",") if s]
    peers = [p for p in args.peers.split(",") if p]
    skip = {tuple(x.split(":")) for x in args.skip.split(",") if x}
    work = args.work
    common = ["--cache", str(args.cache), "--warmup", str(args.warmup)]
    if args.pool is not None:
        common += ["--pool", str(args.pool)]
    for size in sizes:
        nq = args.queries if size < 100_000 else max(5, args.queries // 3)
        out["sizes"][str(size)] = {}
        for key in peers:
            if (key, str(size)) in skip:
                out["skipped"][f"{key}:{size}"] = args.skip_reason.get(key, "not run")
                continue
            folder = work / f"{key}-{size}"
            base = [*common, "--peer", key, "--size", str(size), "--folder", str(folder)]
            base += ["--queries", str(nq)]
            t = time.perf_counter()
            if persistent(key):
                res = run_worker([*base, "--phase", "build"], args.timeout)
                if "error" not in res:
                    res |= run_worker([*base, "--phase", "query"], args.timeout)
            else:
                res = run_worker([*base, "--phase", "all"], args.timeout)
            res["wall_s"] = time.perf_counter() - t
            out["sizes"][str(size)][key] = res
            shutil.rmtree(folder, ignore_errors=True)
            print(f"{key} {size}: {json.dumps(res)[:400]}", flush=True)
    if args.quality:
        for key in peers:
            res = run_worker(
                [*common, "--quality", "--peer", key, "--folder", str(work / f"q-{key}")],
                args.timeout,
            )
            out["quality"][key] = res
            shutil.rmtree(work / f"q-{key}", ignore_errors=True)
            print(f"quality {key}: {res}", flush=True)
    return out


def report(payload: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(payload, indent=1))
    m = payload["machine"]
    lines = [
        "# Peers (issue 17): speed and recall quality on the same work",
        "",
        f"Machine: {m['cores']} cores, {m['cpu']}, {m['memory_gib']} GiB, Python {m['python']}; "
        f"{m['date']}, load average at start {m['load_at_start']} (shared with other agents).",
        "",
    ]
    rows = []
    for size, per in payload["sizes"].items():
        ours = per.get("episodex", {}).get("latency", {})
        for key, r in per.items():
            if "error" in r:
                rows.append([f"{int(size):,}", peer_name(key), f"failed: {r['error']}"] + [""] * 9)
                continue
            lat = r["latency"]
            e2e, known = lat["e2e"]["p50_ms"], lat["known"]["p50_ms"]
            rows.append(
                [
                    f"{int(size):,}",
                    peer_name(key),
                    e2e,
                    lat["e2e"]["p95_ms"],
                    known,
                    lat["known"]["p95_ms"],
                    e2e / ours["e2e"]["p50_ms"] if ours else float("nan"),
                    known / ours["known"]["p50_ms"] if ours else float("nan"),
                    r.get("write_dps", float("nan")),
                    r.get("open_s", float("nan")),
                    r.get("rss_mib", float("nan")),
                    r.get("disk_mib", float("nan")),
                ]
            )
    lines += [
        "## Speed",
        "",
        md_table(
            [
                "episodes",
                "peer",
                "p50 ms",
                "p95 ms",
                "p50 no embed",
                "p95 no embed",
                "p50 / episodex",
                "no-embed p50 / episodex",
                "writes/s",
                "open s",
                "RSS MiB",
                "disk MiB",
            ],
            rows,
        ),
        "",
    ]
    for k, why in payload.get("skipped", {}).items():
        lines.append(f"- not run: {k}: {why}")
    q = payload.get("quality", {})
    if q:
        lines += ["", "## Recall quality, LoCoMo dev split (turn recall_any)", ""]
        qrows = []
        for key, r in q.items():
            if "error" in r:
                qrows.append([peer_name(key), f"failed: {r['error']}", "", ""])
            else:
                qrows.append(
                    [peer_name(key), 100 * r["turn_any@5"], 100 * r["turn_any@10"], r["questions"]]
                )
        lines.append(md_table(["peer", "any@5", "any@10", "questions"], qrows))
    (out / "peers.md").write_text("\n".join(lines) + "\n")
    plot(payload, out / "peers.png")


def plot(payload: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    q = payload.get("quality", {})
    sizes = list(payload["sizes"])
    if not q or not sizes:
        return
    size = max(
        sizes,
        key=lambda s: sum("latency" in r for r in payload["sizes"][s].values()) * 1e9 + int(s),
    )
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, r in payload["sizes"][size].items():
        if "latency" not in r or key not in q or "error" in q[key]:
            continue
        x, y = r["latency"]["e2e"]["p50_ms"], 100 * q[key]["turn_any@5"]
        ax.scatter([x], [y], s=60, color="C3" if key == "episodex" else "C0")
        ax.annotate(peer_name(key), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(f"recall p50, end to end, ms ({int(size):,} episodes, log scale)")
    ax.set_ylabel("LoCoMo dev turn recall_any@5 (%)")
    ax.set_title("Recall quality against latency (top left is better)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--skip", default="", help="peer:size pairs not to run, e.g. mem0:100000")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-quality", dest="quality", action="store_false")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--work", type=Path, default=CACHE / "peers")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--pool", type=int, default=None, help="use only the first N text pairs")
    # worker
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--phase", default="all", help=argparse.SUPPRESS)
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    ap.add_argument("--quality", dest="quality_worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.skip_reason = {}
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.worker:
        res = asyncio.run(worker_quality(args) if args.quality_worker else worker_size(args))
        print(json.dumps(res))
        return res
    if args.report_only:
        payload = json.loads((args.out / "peers.json").read_text())
    else:
        payload = orchestrate(args)
    report(payload, args.out)
    return payload


if __name__ == "__main__":
    main()
