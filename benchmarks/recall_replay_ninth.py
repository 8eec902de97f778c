"""Speaker streams and conversation diversity, replayed offline, each checked by leaving one out.

    .venv/bin/python benchmarks/recall_replay_ninth.py   # writes results/recall_quality_replay_ninth.md

Uses `recall_replay_eighth.py`'s replay of the eighth pass's default (the five streams and
`dated`: 74.7 / 82.8 / 91.5, the engine's figures). 496 of the 505 dev questions name one of
their conversation's two speakers, and 95% of their evidence turns are that speaker's. Each
episode stores its speaker (`ConversationEpisode.speakers`), and a query word that is a word of
a stored speaker (case-folded, as `episodex` matches them: `speaker_keys`,
`query_speaker_terms`) makes a speaker stream: one of the
five streams searched again among the named speakers' episodes. Three grids:
- one speaker stream: which of the five streams, at which weight;
- two speaker streams: the long dense one with each of the others;
- conversation diversity on top: the fused top 10 re-ordered greedily, each hit's fused score
  times (1 - p) per hit of its session already placed (what `conversation_diversity` does to
  the previous-conversations list; it never changes which ten are returned).
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_replay as rr
from _common import load_locomo
from episodex._episodes.model import query_speaker_terms, speaker_keys
from episodex._episodes.periods import DATED_SLACK
from episodex._episodes.store import (
    DEFAULT_CONVERSATION_DIVERSITY,
    DEFAULT_DATED_WEIGHT,
    DEFAULT_RRF_K,
    DEFAULT_SPEAKER_WEIGHTS,
    DEFAULT_WEIGHTS,
)
from recall_replay_eighth import Fused, Lab

#: Speaker stream name -> the stream it searches again (as `EpisodeStore._streams` names them).
SPEAKER_STREAMS = {"speaker": "long", "speaker_bm25": "bm25"}


class Speakers:
    """Each episode's speaker, and each stream's ranking among the speakers a question names."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        by_dia = {
            conv.name: {t.dia_id: speaker_keys([t.speaker]) for t in conv.turns}
            for conv in load_locomo()
        }
        self.keys = [[set(by_dia[d["name"]][x]) for x in d["dia"]] for d in rr.DATA]
        self._memo: dict[tuple[int, int, str], np.ndarray] = {}

    def named(self, ci: int, qi: int) -> np.ndarray:
        """The episodes whose speaker the question names (case-folded, as the store matches)."""
        words = set(query_speaker_terms(rr.DATA[ci]["questions"][qi]))
        return np.array([i for i, keys in enumerate(self.keys[ci]) if keys & words], dtype=int)

    def ranking(self, ci: int, qi: int, stream: str) -> np.ndarray:
        """`stream`'s best 100 among the named speakers' episodes (empty if none is named)."""
        key = (ci, qi, stream)
        if key not in self._memo:
            idx = self.named(ci, qi)
            scores = self.lab.dated.base[ci][stream][qi]
            order = idx[np.argsort(-scores[idx], kind="stable")] if idx.size else idx
            if stream not in ("short", "long"):
                order = order[scores[order] > 0]  # a sparse search finds only shared terms
            self._memo[key] = order[:100]
        return self._memo[key]

    def fuse(
        self,
        ci: int,
        qi: int,
        speaker: dict[str, float],
        base: dict[str, float] = DEFAULT_WEIGHTS,
        dated: float = DEFAULT_DATED_WEIGHT,
    ) -> Fused:
        """The default's fusion with speaker streams (stream searched again -> weight)."""
        lists = [(w, self.lab.deep[ci][s][qi][:100]) for s, w in base.items() if w]
        if dated:
            lists.append((dated, self.lab.dated.dated_ranking(ci, qi, "short", DATED_SLACK.days)))
        lists += [(w, self.ranking(ci, qi, s)) for s, w in speaker.items() if w]
        acc: dict[int, float] = {}
        for w, docs in lists:
            for pos, doc in enumerate(docs):
                acc[int(doc)] = acc.get(int(doc), 0.0) + w / (DEFAULT_RRF_K + pos + 1)
        order = sorted(acc, key=lambda x: -acc[x])
        return [(i, acc[i]) for i in order[:60]]


def diversified(lab: Lab, ci: int, fused: Fused, p: float, n: int = 10) -> list[int]:
    """The top `n` re-ordered greedily: (1 - p) per hit of the same session placed before."""
    left = list(fused[:n])
    out: list[int] = []
    shown: dict[int, int] = {}
    while left:
        j = max(
            range(len(left)),
            key=lambda j: left[j][1] * (1 - p) ** shown.get(lab.place[ci][left[j][0]][0], 0),
        )
        i = left.pop(j)[0]
        out.append(i)
        shown[lab.place[ci][i][0]] = shown.get(lab.place[ci][i][0], 0) + 1
    return out


def leave_one_stream_out(
    lab: Lab, spk: Speakers, chosen: dict[str, float], default: rr.Result
) -> list[str]:
    """The new default with each of its streams left out, the others' weights unchanged.

    What a stream buys, for the latency it costs: each runs twice per side of a recall (a
    prefetch of the fused request, and the id-only search behind its ranks).
    """
    p = DEFAULT_CONVERSATION_DIVERSITY

    def run(base: dict[str, float], dated: float, speaker: dict[str, float]) -> rr.Result:
        fused = [
            [spk.fuse(ci, qi, speaker, base, dated) for qi in range(len(d["questions"]))]
            for ci, d in enumerate(rr.DATA)
        ]
        return lab.evaluate(lambda ci, qi, f: diversified(lab, ci, f, p), fused)

    rows = [("none (the new default)", default)]
    for name in DEFAULT_WEIGHTS:
        rows.append((name, run({**DEFAULT_WEIGHTS, name: 0.0}, DEFAULT_DATED_WEIGHT, chosen)))
    rows.append(("dated", run(dict(DEFAULT_WEIGHTS), 0.0, chosen)))
    for name, stream in SPEAKER_STREAMS.items():
        rest = {s: w for s, w in chosen.items() if s != stream}
        rows.append((name, run(dict(DEFAULT_WEIGHTS), DEFAULT_DATED_WEIGHT, rest)))
    out = [
        "## Each stream left out of the new default",
        "",
        "The other weights unchanged. Turn any@5 / turn any@10 / session any@5; the targets are "
        "75 / 84 / 92, and 84.0 here is 424 of 505 questions (83.96%).",
        "",
        "| left out | dev split | " + " | ".join(rr.NAMES) + " |",
        "|---|---|" + "---|" * len(rr.NAMES),
    ]
    for name, res in rows:
        cells = " | ".join(rr.fmt(rr.pct(res, [n])) for n in rr.NAMES)
        out.append(f"| {name} | {rr.fmt(rr.pct(res))} | {cells} |")
    return [*out, ""]


def main() -> None:
    start = time.perf_counter()
    lab = Lab()
    spk = Speakers(lab)
    default = lab.default
    named = sum(
        spk.named(ci, qi).size > 0
        for ci, d in enumerate(rr.DATA)
        for qi in range(len(d["questions"]))
    )
    parts = [
        "# Speaker streams and conversation diversity: offline replay, leave one out",
        "",
        "Written by `benchmarks/recall_replay_ninth.py`. Turn any@5 / turn any@10 / session "
        f"any@5, dev split, 505 questions ({named} name a speaker). The eighth pass's default "
        f"replayed: {rr.fmt(rr.pct(default))}. Each grid includes it (no speaker stream, no "
        "diversity), so a fold may pick it.",
        "",
    ]

    def run(speaker: dict[str, float], p: float = 0.0) -> rr.Result:
        fused = [
            [spk.fuse(ci, qi, speaker) for qi in range(len(d["questions"]))]
            for ci, d in enumerate(rr.DATA)
        ]
        if p:
            return lab.evaluate(lambda ci, qi, f: diversified(lab, ci, f, p), fused)
        return lab.evaluate(lambda ci, qi, f: [i for i, _ in f], fused)

    def section(title: str, note: str, grid: list[tuple[str, rr.Result]]) -> None:
        grid = [("off (the eighth pass's default)", default), *grid]
        parts.append(rr.loo_section(title, note, grid, default, top=5))

    section(
        "One speaker stream",
        "One of the five streams searched again among the named speakers' episodes.",
        [
            (f"{s} {w:g}", run({s: w}))
            for s, w in itertools.product(rr.STREAMS, (0.05, 0.1, 0.2, 0.3, 0.4, 0.5))
        ],
    )
    section(
        "Two speaker streams",
        "The long dense stream again among the named speakers' episodes, with a second one.",
        [
            (f"long {wl:g} + {s} {w:g}", run({"long": wl, s: w}))
            for wl, s, w in itertools.product(
                (0.1, 0.2, 0.3), ("short", "bm25", "splade", "splade_short"), (0.1, 0.2)
            )
        ],
    )
    grid: list[tuple[str, rr.Result]] = []
    for wl, wb, p in itertools.product((0.2, 0.3), (0.0, 0.1, 0.2), (0.0, 0.03, 0.05, 0.07, 0.1)):
        grid.append(
            (f"long {wl:g} + bm25 {wb:g}, diversity {p:g}", run({"long": wl, "bm25": wb}, p))
        )
    section(
        "Speaker streams with conversation diversity",
        "The fused top 10 re-ordered greedily: (1 - p) per hit of the same session placed "
        "before it (the previous-conversations list's `conversation_diversity`).",
        grid,
    )
    chosen = {SPEAKER_STREAMS[name]: w for name, w in DEFAULT_SPEAKER_WEIGHTS.items()}
    streams_only = run(chosen)
    grid = [(f"diversity {p:g}", run(chosen, p)) for p in (0.03, 0.05, 0.07, 0.1, 0.15)]
    parts.append(
        rr.loo_section(
            "Conversation diversity alone, on top of the chosen speaker streams",
            f"Speaker streams {chosen} in every row; the baseline here is them without diversity.",
            [("diversity 0", streams_only), *grid],
            streams_only,
            top=5,
        )
    )
    new = run(chosen, DEFAULT_CONVERSATION_DIVERSITY)
    parts += leave_one_stream_out(lab, spk, chosen, new)
    parts += [
        "## The new default",
        "",
        f"Speaker streams {chosen}, conversation diversity {DEFAULT_CONVERSATION_DIVERSITY:g}: "
        f"{rr.fmt(rr.pct(new))} over the dev split; per conversation "
        + ", ".join(
            f"{n} {rr.fmt(rr.pct(new, [n]))} (was {rr.fmt(rr.pct(default, [n]))})" for n in rr.NAMES
        )
        + ".",
        "",
        f"Run time {time.perf_counter() - start:.0f} s.",
    ]
    path = rr.RESULTS / "recall_quality_replay_ninth.md"
    path.write_text("\n".join(parts) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
