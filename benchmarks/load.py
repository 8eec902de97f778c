"""Issue 17 items 3-5: concurrency, event-loop stall, cold start, the quantized store.

    .venv/bin/python benchmarks/load.py [--episodes 20000]

Writes `results/load.md` and `load.json`. Vectors of the stored texts come from the cache that
`peers.py` fills (`SharedVectors`); recall queries are embedded for real.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CACHE, RESULTS, machine, md_table
from episodex import EpisodicMemory, SyncEpisodicMemory
from peers import USERS, shared_vectors

AGENT = "bench"


def episodes(pool: list[tuple[str, str]], start: int, n: int) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": pool[j % len(pool)][0],
            "long_summary": pool[j % len(pool)][1],
            "user_id": f"user-{j % USERS:03d}",
            "agent_id": AGENT,
            "conversation_id": "c",
        }
        for j in range(start, start + n)
    ]


async def concurrency(mem: EpisodicMemory, queries: list[str], total: int) -> dict[str, float]:
    """Recalls/s by number of concurrent callers, the single caller measured warm, twice.

    A warm-up round runs first (model sessions, page cache, thread pool); the single caller is
    measured again last, so a drift of the machine's load shows as a gap between the two.
    """
    out: dict[str, float] = {}
    rounds = [("warm-up", 4), ("async x1", 1), ("async x4", 4), ("async x16", 16)]
    rounds += [("async x64", 64), ("async x1 (again)", 1)]
    for name, callers in rounds:
        todo = list(range(total if name != "warm-up" else min(total, 32)))

        async def caller(todo: list[int] = todo) -> None:
            while todo:
                i = todo.pop()
                await mem.recall(
                    user_id=f"user-{i % USERS:03d}", agent_id=AGENT, query=queries[i % len(queries)]
                )

        n = len(todo)
        t = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(callers)))
        if name != "warm-up":
            out[name] = n / (time.perf_counter() - t)
    return out


def threads(mem: SyncEpisodicMemory, queries: list[str], total: int, n: int) -> float:
    todo = list(range(total))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            mem.recall(
                user_id=f"user-{i % USERS:03d}", agent_id=AGENT, query=queries[i % len(queries)]
            )

    t = time.perf_counter()
    ts = [threading.Thread(target=work) for _ in range(n)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return total / (time.perf_counter() - t)


async def idle_gaps(seconds: float) -> list[float]:
    """The 1 ms ticker's gaps with nothing else running: the machine's own scheduling noise."""
    gaps: list[float] = []
    last = time.perf_counter()
    end = last + seconds
    while last < end:
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    return sorted(gaps, reverse=True)


async def stall(mem: EpisodicMemory, pool: list[tuple[str, str]], n: int) -> dict[str, Any]:
    """Largest gaps of a 1 ms ticker while `memorize_many` embeds `n` new texts for real."""
    idle = await idle_gaps(5.0)
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    # Texts the cache does not hold, so the real model embeds them.
    eps = episodes(
        [(f"{s} (again {k})", f"{lo} (again {k})") for k, (s, lo) in enumerate(pool[:n])], 0, n
    )
    t = time.perf_counter()
    await mem.memorize_many(eps)
    batch = time.perf_counter() - t
    done.set()
    await task
    top = sorted(gaps, reverse=True)[:5]
    return {
        "batch_s": batch,
        "episodes": n,
        "max_gap_ms": top[0] * 1e3,
        "top_gaps_ms": [g * 1e3 for g in top],
        "idle_top_gaps_ms": [g * 1e3 for g in idle[:5]],
        "ticks": len(gaps),
    }


COLD = r"""
import sys, time, json
t0 = time.perf_counter()
import episodex
t1 = time.perf_counter()
kw = {"path": sys.argv[1]} if sys.argv[1] != ":memory:" else {"location": ":memory:"}
mem = episodex.SyncEpisodicMemory(**kw)
t2 = time.perf_counter()
if sys.argv[1] == ":memory:":
    mem.memorize(short_summary="refund for order 7", long_summary="refund for order 7",
                 user_id="user-000", agent_id="bench", conversation_id="c")
t3 = time.perf_counter()
mem.recall(user_id="user-000", agent_id="bench", query="what did we say about the refund?")
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_recall_s": t4 - t3,
                  "total_s": (t4 - t3) + (t2 - t0)}))
"""

PROBE = r"""
import sys, time, json, psutil
from episodex import EpisodicMemory, default_embedder
emb = default_embedder(); emb.embed_query("warm")
p = psutil.Process(); base = p.memory_info().rss
t = time.perf_counter()
mem = EpisodicMemory(path=sys.argv[1], embedder=emb, quantize=sys.argv[2] == "1",
                     splade=sys.argv[3] == "1")
open_s = time.perf_counter() - t
import asyncio
async def go():
    for i in range(100):
        await mem.recall(user_id=f"user-{i % 100:03d}", agent_id="bench", query=f"refund {i}")
asyncio.run(go())
print(json.dumps({"open_s": open_s, "rss_mib": (p.memory_info().rss - base) / 2**20}))
"""


def fresh(code: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


async def quant_recall(
    path: Path, emb: Any, convs_q: list[tuple[str, str, list[str]]], *, splade: bool
) -> float:
    mem = EpisodicMemory(path=path, embedder=emb, splade=splade)
    hit = 0
    for user, q, ev in convs_q:
        res = await mem.recall(
            user_id=user,
            agent_id=AGENT,
            query=q,
            previous_conversation_limit=5,
            same_conversation_limit=0,
        )
        hit += bool(set(ev) & {it["metadata"]["dia_id"] for it in res["previous_conversations"]})
    mem.close()
    return hit / len(convs_q)


async def quantized(args: argparse.Namespace, emb: Any) -> dict[str, Any]:
    """The dev split's turns repeated across `copies` users each, unquantized vs quantized."""
    import recall_quality as rq
    from _common import load_locomo

    convs = load_locomo()
    emb.known_queries = True
    out: dict[str, Any] = {}
    qs = [
        (f"{c.name}-u0", q.question, q.evidence)
        for c in convs
        for q in c.questions
        if q.category in rq.CATEGORIES and q.evidence
    ]
    for flag in (False, True):
        path = args.work / f"quant-{flag}"
        shutil.rmtree(path, ignore_errors=True)
        mem = EpisodicMemory(path=path, embedder=emb, quantize=flag, splade=args.splade)
        for copy in range(args.copies):
            batch = []
            for c in convs:
                for i, turn in enumerate(c.turns):
                    short, long = rq.DEFAULT_RECIPE.summaries(c.turns, i)
                    batch.append(
                        {
                            "short_summary": short,
                            "long_summary": long,
                            "user_id": f"{c.name}-u{copy}",
                            "agent_id": AGENT,
                            "conversation_id": "c",
                            "metadata": {"dia_id": turn.dia_id},
                        }
                    )
            await mem.memorize_many(batch)
        await mem.optimize()
        n = await mem.count(user_id=f"{convs[0].name}-u0", agent_id=AGENT)
        mem.close()
        out[str(flag)] = {
            "recall@5": await quant_recall(path, emb, qs, splade=args.splade),
            "per_user": n,
        }
        out[str(flag)] |= fresh(PROBE, str(path), "1" if flag else "0", "1" if args.splade else "0")
        out["episodes"] = sum(len(c.turns) for c in convs) * args.copies
    emb.known_queries = False
    return out


PROBE_POOL = r"""
import sys, time, json, psutil
from episodex import EpisodicMemory
sys.path.insert(0, sys.argv[4])
from peers import shared_vectors
from pathlib import Path
emb, pool, queries = shared_vectors(Path(sys.argv[3]))
emb.known_queries = True
# A cold start: the store's files leave the page cache first (as after a reboot).
from _common import evict_page_cache
evict_page_cache(sys.argv[1])
p = psutil.Process(); base = p.memory_info().rss
t = time.perf_counter()
mem = EpisodicMemory(path=sys.argv[1], embedder=emb, quantize=sys.argv[2] == "1", splade=False)
open_s = time.perf_counter() - t
rss_open = (p.memory_info().rss - base) / 2**20
t = time.perf_counter()
for i in range(100):
    mem.store.recall(user_id=f"user-{i % 100:03d}", agent_id="bench", query=queries[i % len(queries)])
recall_ms = (time.perf_counter() - t) * 10
# The same 100 users again: their pages are in memory now.
t = time.perf_counter()
for i in range(100):
    mem.store.recall(user_id=f"user-{i % 100:03d}", agent_id="bench", query=queries[(i + 7) % len(queries)])
warm_ms = (time.perf_counter() - t) * 10
# Where the store's resident pages are: mapped files of the store folder, by file kind.
by_kind = {}
for m in p.memory_maps(grouped=True):
    if m.path.startswith(sys.argv[1]):
        kind = "/".join(m.path[len(sys.argv[1]):].split("/")[-2:])
        kind = "".join(c for c in kind if not c.isdigit())
        by_kind[kind] = by_kind.get(kind, 0) + m.rss / 2**20
top = dict(sorted(by_kind.items(), key=lambda kv: -kv[1])[:6])
print(json.dumps({"open_s": open_s, "rss_open_mib": rss_open, "recall_ms": recall_ms,
                  "warm_recall_ms": warm_ms,
                  "rss_mib": (p.memory_info().rss - base) / 2**20,
                  "mapped_store_mib": sum(by_kind.values()), "mapped_top": top}))
"""


async def quantized_pool(
    args: argparse.Namespace, emb: Any, pool: list[tuple[str, str]]
) -> dict[str, Any]:
    """Open time and RSS of a store of `--quant-episodes` pool episodes, plain and quantized.

    Built from the cached document vectors without the SPLADE stream (its vectors are sparse
    and not what `quantize` changes); the probe evicts the store's files from the page cache,
    opens it in a fresh process and runs 100 recalls with known query vectors, one per user,
    then 100 more for the same users, so the RSS is the store's, not a model's.
    """
    n = args.quant_episodes
    out: dict[str, Any] = {"episodes": n, "raw_vectors_mib": n * 2 * emb.dimension * 4 / 2**20}
    for flag in (False, True):
        path = args.work / f"quant-pool-{flag}-{n}"
        if not (path / "built").exists():
            shutil.rmtree(path, ignore_errors=True)
            mem = EpisodicMemory(path=path, embedder=emb, quantize=flag, splade=False)
            for s in range(0, n, 2048):
                await mem.memorize_many(episodes(pool, s, min(2048, n - s)))
            await mem.optimize()
            mem.close()
            (path / "built").touch()
        here = str(Path(__file__).resolve().parent)
        out[str(flag)] = [
            fresh(PROBE_POOL, str(path), "1" if flag else "0", str(args.cache), here)
            for _ in range(2)
        ]
    return out


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    emb, pool, queries = shared_vectors(args.cache)
    res: dict[str, Any] = {"machine": machine(), "episodes": args.episodes}
    if args.quant_episodes:
        res["quantized_pool"] = await quantized_pool(args, emb, pool)
        if args.quant_only:
            return res
    path = args.work / "load-store"
    shutil.rmtree(path, ignore_errors=True)
    mem = EpisodicMemory(path=path, embedder=emb, splade=args.splade)
    for s in range(0, args.episodes, 2048):
        await mem.memorize_many(episodes(pool, s, min(2048, args.episodes - s)))
    await mem.optimize()
    res["rates"] = await concurrency(mem, queries, args.recalls)
    sync = SyncEpisodicMemory(memory=mem)
    res["rates"]["sync 1 thread"] = threads(sync, queries, args.recalls, 1)
    res["rates"]["sync 4 threads"] = threads(sync, queries, args.recalls, 4)
    res["stall"] = await stall(mem, pool, args.stall)
    mem.close()
    res["cold"] = {"edge": fresh(COLD, str(path)), ":memory:": fresh(COLD, ":memory:")}
    if args.copies:
        res["quantized"] = await quantized(args, emb)
    return res


def report(res: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "load.json").write_text(json.dumps(res, indent=1))
    qp = res.get("quantized_pool")
    qlines: list[str] = []
    if qp:
        qlines = [
            "",
            f"Quantized store built from the pool: {qp['episodes']:,} episodes, raw dense vectors "
            f"{qp['raw_vectors_mib']:.0f} MiB (two 384-d float32 a point); two fresh-process opens "
            "each, the store's files evicted from the page cache first",
            "",
            md_table(
                [
                    "quantize",
                    "open s",
                    "RSS MiB after open",
                    "RSS MiB after 200 recalls",
                    "recall ms, first 100 (one per user)",
                    "recall ms, next 100 (same users)",
                    "RSS / raw vectors",
                ],
                [
                    [
                        k,
                        r.get("open_s"),
                        r.get("rss_open_mib"),
                        r.get("rss_mib"),
                        r.get("recall_ms"),
                        r.get("warm_recall_ms"),
                        (r.get("rss_mib") or 0) / qp["raw_vectors_mib"],
                    ]
                    for k in ("False", "True")
                    for r in qp[k]
                ],
            ),
        ]
    if "rates" not in res:
        out.mkdir(parents=True, exist_ok=True)
        (out / "load.json").write_text(json.dumps(res, indent=1))
        (out / "load.md").write_text("\n".join(qlines) + "\n")
        return
    one = res["rates"]["async x1"]
    st = res["stall"]
    lines = [
        f"# Load, cold start, quantized store ({res['machine']['date']}, load {res['machine']['load_at_start']})",
        "",
        f"Store: {res['episodes']:,} episodes, Qdrant Edge, optimized; recalls embed the query for real.",
        "",
        md_table(
            ["callers", "recalls/s", "x single caller"],
            [[k, v, v / one] for k, v in res["rates"].items()],
        ),
        "",
        f"Event loop during `memorize_many` of {st['episodes']} episodes (real embedding, "
        f"{st['batch_s']:.1f} s): largest gap of a 1 ms ticker **{st['max_gap_ms']:.1f} ms** "
        f"({st['ticks']} ticks); top five {', '.join(f'{g:.1f}' for g in st['top_gaps_ms'])} ms. "
        f"The same ticker alone for 5 s just before (the machine's own noise): "
        f"{', '.join(f'{g:.1f}' for g in st['idle_top_gaps_ms'])} ms.",
        "",
        md_table(
            ["cold start", "import s", "open s", "first recall s", "total s"],
            [
                [k, v.get("import_s"), v.get("open_s"), v.get("first_recall_s"), v.get("total_s")]
                for k, v in res["cold"].items()
            ],
        ),
    ]
    lines += qlines
    q = res.get("quantized")
    if q:
        lines += [
            "",
            f"Quantized store: {q['episodes']:,} episodes (dev split turns repeated per user)",
            "",
            md_table(
                ["quantize", "open s", "RSS MiB after 100 recalls", "turn recall_any@5"],
                [
                    [k, v.get("open_s"), v.get("rss_mib"), 100 * v["recall@5"]]
                    for k, v in q.items()
                    if isinstance(v, dict)
                ],
            ),
        ]
    (out / "load.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=20000)
    ap.add_argument("--recalls", type=int, default=200)
    ap.add_argument("--stall", type=int, default=256)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument(
        "--quant-episodes", type=int, default=0, help="size of the pool-built quantized store"
    )
    ap.add_argument(
        "--quant-only", action="store_true", help="only the pool-built quantized stores"
    )
    ap.add_argument(
        "--no-splade",
        dest="splade",
        action="store_false",
        help="build the load store without the SPLADE stream (its documents are not cached)",
    )
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--work", type=Path, default=CACHE / "load")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    res = asyncio.run(amain(args))
    report(res, args.out)
    print((args.out / "load.md").read_text())
    return res


if __name__ == "__main__":
    main()
