"""Shared pieces of the benchmark harnesses: LoCoMo loading, the vector cache, timing, reports.

Nothing here is part of the package: the harnesses only use episodex's public classes and the
documented `VectorCacheEmbedder` hook.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from episodex import SpladeEncoder
from episodex._embedders.base import Embedder
from episodex.plan import SparseVec

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
RESULTS = HERE / "results"
LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo-dev"
if not LOCOMO.exists():  # /work/main/benchmarks -> /work/shared/data/locomo-dev
    LOCOMO = Path("/work/shared/data/locomo-dev")

_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D\d+:\d+")


# -- LoCoMo -------------------------------------------------------------------------------


@dataclass
class Turn:
    """One turn of a LoCoMo conversation."""

    dia_id: str
    session: int
    index: int  # position in the whole conversation
    speaker: str
    text: str
    caption: str | None
    date: str  # the session's date_time string


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    session_dates: dict[int, str] = field(default_factory=dict[int, str])


def parse_evidence(raw: Sequence[str]) -> list[str]:
    """Evidence ids, repairing the few entries that pack several ids in one string."""
    out: list[str] = []
    for item in raw:
        for found in _DIA.findall(item):
            if found not in out:
                out.append(found)
    return out


def load_locomo(data_dir: Path = LOCOMO, names: Sequence[str] | None = None) -> list[Conversation]:
    """The LoCoMo conversations of the development split, in file-name order."""
    files = sorted(data_dir.glob("conv-*.json"))
    if names:
        files = [f for f in files if f.stem in set(names)]
    convs: list[Conversation] = []
    for path in files:
        data = json.loads(path.read_text())
        sessions = sorted(
            int(m.group(1))
            for k in data
            if (m := _SESSION.fullmatch(k)) and isinstance(data[k], list)
        )
        turns: list[Turn] = []
        dates: dict[int, str] = {}
        for n in sessions:
            date = str(data.get(f"session_{n}_date_time", ""))
            dates[n] = date
            for t in data[f"session_{n}"]:
                turns.append(
                    Turn(
                        dia_id=t["dia_id"],
                        session=n,
                        index=len(turns),
                        speaker=t["speaker"],
                        text=t["text"],
                        caption=t.get("blip_caption"),
                        date=date,
                    )
                )
        questions = [
            Question(
                str(q["question"]), int(q["category"]), parse_evidence(q.get("evidence") or [])
            )
            for q in data["qa"]
        ]
        convs.append(
            Conversation(path.stem, (data["speaker_a"], data["speaker_b"]), turns, questions, dates)
        )
    return convs


def turn_line(turn: Turn) -> str:
    """`Speaker: text`, with the caption of a shared photo when there is one."""
    line = f"{turn.speaker}: {turn.text}"
    if turn.caption:
        line += f" [shares a photo: {turn.caption}]"
    return line


def window(turns: Sequence[Turn], i: int, before: int, after: int) -> list[Turn]:
    """Turn `i` with up to `before`/`after` neighbours from the same session."""
    me = turns[i]
    lo = max(0, i - before)
    hi = min(len(turns), i + after + 1)
    return [t for t in turns[lo:hi] if t.session == me.session]


# -- the vector cache ---------------------------------------------------------------------


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class DiskVectorCache:
    """Text -> vector, kept in one `.npz` file per model under `benchmarks/.cache/`.

    Feeds `episodex._embedders.cache.VectorCacheEmbedder`: embed what is missing once, for real, then
    build the table from the file.
    """

    def __init__(self, model_id: str, folder: Path = CACHE) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)
        self.path = folder / f"vectors-{safe}.npz"
        self._keys: list[str] = []
        self._vectors: np.ndarray | None = None
        self._index: dict[str, int] = {}
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                self._keys = [str(k) for k in data["keys"]]
                self._vectors = np.asarray(data["vectors"], dtype=np.float32)
            self._index = {k: i for i, k in enumerate(self._keys)}

    def missing(self, texts: Sequence[str]) -> list[str]:
        seen: set[str] = set()
        out: list[str] = []
        for t in texts:
            k = text_key(t)
            if k not in self._index and k not in seen:
                seen.add(k)
                out.append(t)
        return out

    def fill(
        self, embedder: Embedder, texts: Sequence[str], *, batch: int = 256, progress: Any = None
    ) -> int:
        """Embed the texts not yet cached (for real) and save; returns how many were embedded."""
        todo = self.missing(texts)
        if not todo:
            return 0
        parts: list[np.ndarray] = []
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            parts.append(np.asarray(embedder.embed_documents(chunk), dtype=np.float32))
            if progress is not None:
                progress(len(chunk))
        fresh = np.concatenate(parts)
        keys = self._keys + [text_key(t) for t in todo]
        vectors = fresh if self._vectors is None else np.concatenate([self._vectors, fresh])
        tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=np.asarray(keys), vectors=vectors)
        tmp.replace(self.path)
        self._keys, self._vectors = keys, vectors
        self._index = {k: i for i, k in enumerate(keys)}
        return len(todo)

    def table(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of these texts (all must be cached), for `VectorCacheEmbedder`."""
        assert self._vectors is not None or not texts
        out: dict[str, np.ndarray] = {}
        for t in texts:
            out[t] = self._vectors[self._index[text_key(t)]]  # type: ignore[index]
        return out


# -- timing and reports -------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = float("nan")
    try:
        import psutil

        mem_gib = psutil.virtual_memory().total / 2**30
    except ImportError:
        pass
    load = os.getloadavg()
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_gib, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_at_start": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    }


class KnownQueries:
    """An `Embedder` that serves query vectors computed beforehand, and embeds documents for real.

    Used to time recall without the query embedding, and to score many configurations on the
    same questions without embedding each question again.

    Args:
        inner: The real embedder (its id and dimension are reported).
        table: Query text to vector; fill it before the clock starts.
        fallback: Embed a query missing from the table instead of raising `KeyError`.
    """

    def __init__(
        self, inner: Embedder, table: dict[str, np.ndarray] | None = None, *, fallback: bool = False
    ) -> None:
        self._inner = inner
        self.table: dict[str, np.ndarray] = {} if table is None else table
        self._fallback = fallback

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        vec = self.table.get(text)
        if vec is None:
            if not self._fallback:
                raise KeyError(f"query not embedded beforehand: {text!r}")
            return self._inner.embed_query(text)
        return vec


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            if v != v:  # NaN
                return "n/a"
            if abs(v) >= 100:
                return f"{v:,.0f}"
            if abs(v) >= 10:
                return f"{v:.1f}"
            return f"{v:.2f}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def dir_size(path: Path, *, allocated: bool = False) -> int:
    """Bytes under `path`: apparent sizes, or the blocks really allocated (as `du` counts)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                st = (Path(root) / f).stat()
            except OSError:
                continue
            total += st.st_blocks * 512 if allocated else st.st_size
    return total


def evict_page_cache(path: str | Path) -> None:
    """Drop the files under `path` from the page cache, as after a reboot (a cold open)."""
    for root, _, files in os.walk(path):
        for f in files:
            fd = os.open(Path(root) / f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


class CachedSplade(SpladeEncoder):
    """SPLADE for bulk loading: each distinct stored text is encoded once, then remembered.

    The pool holds 1,557 distinct text pairs repeated across users, so this is what makes a
    100k store quick to build, as `VectorCacheEmbedder` does for the dense vectors. Queries are
    always encoded for real: the timed recalls pay the SPLADE query encoder.
    """

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[str, SparseVec] = {}

    def documents(self, texts: Sequence[str]) -> list[SparseVec]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, super().documents(missing), strict=True))
        return [self._memo[t] for t in texts]

    def query(self, text: str) -> SparseVec:
        return SpladeEncoder.documents(self, [text])[0]
