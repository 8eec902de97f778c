"""Cold opens of one embedded store, with and without reading ahead, alternated in one run.

    .venv/bin/python benchmarks/open_ab.py benchmarks/.cache/load/quant-pool-True-100000 --rounds 6

Each open runs in a fresh process after the store's files are evicted from the page cache
(`posix_fadvise(DONTNEED)`, as after a reboot), and times `EpisodicMemory(path=...)` only: the
query embedder is the cached one `load.py` builds its pool store with, so no model loads. The
two modes alternate so a shared disk's changing speed falls on both. Writes
`results/open_ab.json` and prints the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CACHE, RESULTS

PROBE = r"""
import sys, time
from pathlib import Path
root, mode, cache, here = sys.argv[1:5]
sys.path.insert(0, here)
from _common import evict_page_cache
evict_page_cache(root)
from peers import shared_vectors
emb, _, _ = shared_vectors(Path(cache))
from episodex import EpisodicMemory
import episodex._engines.edge as edge
if mode == "off":
    edge.read_ahead = lambda *a, **k: []
t = time.perf_counter()
mem = EpisodicMemory(path=root, embedder=emb, splade=False)  # a quantized store stays so
print(time.perf_counter() - t)
mem.close()
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--out", type=Path, default=RESULTS / "open_ab.json")
    args = ap.parse_args()
    here = str(Path(__file__).resolve().parent)
    opens: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(args.rounds):
        for mode in ("off", "on"):
            proc = subprocess.run(
                [sys.executable, "-c", PROBE, str(args.store), mode, str(args.cache), here],
                capture_output=True,
                text=True,
                check=True,
            )
            opens[mode].append(round(float(proc.stdout.split()[-1]), 3))
    report = {
        "store": str(args.store),
        "open_s": opens,
        "median_s": {m: round(statistics.median(v), 3) for m, v in opens.items()},
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
