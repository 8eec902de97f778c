"""What the engine's part of one recall costs at 100k, request by request, in one run.

    .venv/bin/python benchmarks/engine_cost.py <store, e.g. a speaker_cost.py copy> [--rounds 600]

Runs the `recall_ab.py` recalls (users, conversations, LoCoMo questions; blocks of 20 after
200 ms idle) through `EpisodeStore.recall`. Each time the store hands its requests to the
engine, right after the query encoders ran (so the user's vectors are as cold as in a real
recall), one variant of the batch is timed, in rotation, before the real call goes on:

- `full`: what a recall sends, the fused requests and each stream again as an id-only search;
- `fused`: the fused requests alone (what `with_stream_ranks=False` sends);
- `ranks`: the id-only stream searches alone;
- `fused, one stream` and `its search alone`: one stream as a fused request (nested rank
  fusion, score formula, payload of the hits) and as a plain id-only search, both sides;
- `full, no <stream> ranks`: `full` without one stream's id-only searches;
- `fused, Qdrant's RRF` and `full, Qdrant's RRF`: the fused requests rendered as Qdrant's
  built-in weighted RRF over plain prefetches (no rank step, no score formula), the weights
  scaled by 25 with k 2 (`recall_replay_fusion.py`'s best K); a different fusion, timed only;
- `fused, no payload`: the fused requests without the hits' payload.

Prints the p50 and mean of each over all rounds but the first 5 of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_locomo


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("--rounds", type=int, default=600)
    args = ap.parse_args()

    import qdrant_edge as qe
    from episodex import EpisodicMemory
    from episodex._engines import edge
    from episodex._engines.base import stream_searches
    from episodex._engines.plan import Fused

    mem = EpisodicMemory(path=args.store)
    store: Any = mem.store
    engine: Any = store.engine
    key = engine._key(store.collection)
    shard = engine._shard(store.collection)

    def render(reqs: Sequence[Fused], *, fused: bool, ranks: bool, skip: str = "") -> list[Any]:
        memo: dict[Any, Any] = {}
        out = [edge.render_request(r, key=key, memo=memo) for r in reqs] if fused else []
        if ranks:
            out += [
                edge.render_request(s, native_ids=True, key=key, memo=memo)
                for s in stream_searches(reqs)
                if s.stream.label != skip
            ]
        return out

    def first_stream(reqs: Sequence[Fused]) -> list[Fused]:
        return [dataclasses.replace(r, streams=r.streams[:1], weights=r.weights[:1]) for r in reqs]

    def qdrant_rrf(reqs: Sequence[Fused], *, ranks: bool) -> list[Any]:
        memo: dict[Any, Any] = {}
        out = [
            qe.QueryRequest(
                limit=r.limit,
                prefetches=[
                    edge._prefetch(s, edge._stream_filter(s, r.filter, key, memo), memo)
                    for s in r.streams
                ],
                query=qe.Fusion.Rrf(k=2, weights=[25 * w for w in r.weights]),  # pyright: ignore[reportArgumentType]
                with_payload=edge._payload_selector(r.with_payload),
            )
            for r in reqs
        ]
        if ranks:
            out += [
                edge.render_request(s, native_ids=True, key=key, memo=memo)
                for s in stream_searches(reqs)
            ]
        return out

    def no_payload(reqs: Sequence[Fused]) -> list[Any]:
        return render(
            [dataclasses.replace(r, with_payload=False) for r in reqs], fused=True, ranks=False
        )

    variants: dict[str, Callable[[Sequence[Fused]], list[Any]]] = {
        "full": lambda r: render(r, fused=True, ranks=True),
        "fused": lambda r: render(r, fused=True, ranks=False),
        "ranks": lambda r: render(r, fused=False, ranks=True),
        "fused, one stream": lambda r: render(first_stream(r), fused=True, ranks=False),
        "its search alone": lambda r: render(first_stream(r), fused=False, ranks=True),
        "full, no splade ranks": lambda r: render(r, fused=True, ranks=True, skip="splade"),
        "full, no short ranks": lambda r: render(r, fused=True, ranks=True, skip="short"),
        "fused, Qdrant's RRF": lambda r: qdrant_rrf(r, ranks=False),
        "full, Qdrant's RRF": lambda r: qdrant_rrf(r, ranks=True),
        "fused, no payload": no_payload,
    }
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    explained = engine.query_explained
    calls = [0]

    def timed(collection: str, requests: Sequence[Fused]) -> Any:
        name = names[calls[0] % len(names)]
        calls[0] += 1
        batch = variants[name](requests)
        start = time.perf_counter()
        shard.query_batch(qe.QueryBatchRequest(batch))
        times[name].append((time.perf_counter() - start) * 1000)
        return explained(collection, requests)

    engine.query_explained = timed
    questions = sorted({q.question for conv in load_locomo() for q in conv.questions})
    for i in range(args.rounds):
        if i % 20 == 0:
            time.sleep(0.2)
        store.recall(
            user_id=f"user-{i % 100:03d}",
            agent_id="bench",
            query=questions[(i * 37) % len(questions)],
            conversation_id=f"conv-{(i * 7) % 20:02d}",
        )
    mem.close()
    print("| engine batch | p50 ms | mean ms | n |\n|---|---|---|---|")
    for name in names:
        kept = times[name][5:]
        print(
            f"| {name} | {statistics.median(kept):.2f} | {statistics.mean(kept):.2f} | {len(kept)} |"
        )


if __name__ == "__main__":
    main()
