"""Peak memory and throughput of `memorize_many` on real texts, before and after, in one run.

    .venv/bin/python benchmarks/ingest_memory.py --before-python /work/main/.venv/bin/python

The script builds the LoCoMo dev turns as episodes (short = the turn, long = the session date and
the turn with one neighbour each side, the recall-quality recipe), repeated with a numbered
suffix up to `--episodes`. Each variant runs in a fresh child process (so its peak RSS is its
own) that stores those same episodes with one `memorize_many` call into a new embedded store
with its own default models. The child reports its peak RSS (`ru_maxrss`) and episodes per second. Variants
alternate `--rounds` times, so both see the same machine. `--before-python` is an interpreter
whose `episodex` is the code to compare with (e.g. the main branch's checkout).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, sys, time
from episodex import EpisodicMemory

with open({texts!r}, encoding="utf-8") as fh:
    episodes = json.load(fh)
mem = EpisodicMemory(path={path!r})
mem.store.embedder.embed_query("warm up")
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
mem.store.memorize_many(episodes)
took = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
mem.close()
n = len(episodes)
print(json.dumps(dict(episodes=n, seconds=took, eps=n / took, peak_mib=peak / 1024,
                      before_ingest_mib=base / 1024)))
"""


def build_episodes(n: int) -> list[dict[str, object]]:
    """The LoCoMo dev turns as episodes, repeated with a numbered suffix up to `n`.

    Built here, not in the child, so an older checkout (whose `_common` may not import
    against its own episodex) stores the very same texts.
    """
    sys.path.insert(0, str(HERE))
    from _common import load_locomo, turn_line, window

    pairs: list[tuple[str, str]] = []
    for c in load_locomo():
        for i, t in enumerate(c.turns):
            lines = "\n".join(turn_line(x) for x in window(c.turns, i, 1, 1))
            pairs.append((turn_line(t), f"{t.date}\n{lines}"))
    episodes: list[dict[str, object]] = []
    for j in range(n):
        short, long = pairs[j % len(pairs)]
        tag = "" if j < len(pairs) else f" ({j // len(pairs)})"
        episodes.append(
            {
                "short_summary": short + tag,
                "long_summary": long + tag,
                "user_id": "u",
                "agent_id": "a",
                "conversation_id": f"c{j // 50}",
                "start_index": j,
            }
        )
    return episodes


def run(python: str, texts: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        code = CHILD.format(texts=str(texts), path=str(Path(tmp) / "store"))
        out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--episodes", type=int, default=4325)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--before-python", default=None, help="interpreter with the code to compare")
    p.add_argument("--out", type=Path, default=HERE / "results" / "ingest_memory.json")
    args = p.parse_args()
    variants = {"after (this checkout)": sys.executable}
    if args.before_python:
        variants = {"before": args.before_python, **variants}
    results: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
    with tempfile.TemporaryDirectory() as tmp:
        texts = Path(tmp) / "episodes.json"
        texts.write_text(json.dumps(build_episodes(args.episodes)), encoding="utf-8")
        for _ in range(args.rounds):
            for name, python in variants.items():
                res = run(python, texts)
                results[name].append(res)
                print(
                    f"{name}: {res['eps']:.1f} episodes/s, peak RSS {res['peak_mib']:.0f} MiB "
                    f"(after loading {res['before_ingest_mib']:.0f} MiB)",
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
