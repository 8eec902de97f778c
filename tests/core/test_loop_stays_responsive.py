"""`memorize_many` embeds and writes off the event loop: a ticker task keeps ticking meanwhile."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from episodex import EpisodicMemory


class SlowEmbedder:
    """The bundled model, plus a blocking 0.2 s per document batch: a slow, CPU-bound model."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(0.2)  # blocks whichever thread calls it: the loop, if it ran there
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)


async def test_the_loop_keeps_ticking_while_a_batch_is_memorized(
    tmp_path: Path, embedder: Any
) -> None:
    mem = EpisodicMemory(path=tmp_path / "s", embedder=SlowEmbedder(embedder))
    episodes = [
        {
            "short_summary": f"turn {i} about the refund",
            "long_summary": f"the customer asked about refund number {i}",
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": "c",
        }
        for i in range(64)
    ]
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
    await asyncio.sleep(0.01)
    t = time.perf_counter()
    ids = await mem.memorize_many(episodes)
    batch = time.perf_counter() - t
    done.set()
    await task
    mem.close()
    assert len(ids) == 64
    assert batch >= 0.2  # the blocking embedder really ran
    # On the loop, one gap would be the whole batch; off it, ticks keep coming.
    assert max(gaps) < batch / 2, (max(gaps), batch)
    assert len(gaps) >= 10


class RecordingEmbedder:
    """The bundled model, noting which thread embeds and how many texts each call takes."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[tuple[int, int]] = []  # (thread id, texts)

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append((threading.get_ident(), len(texts)))
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)


def _episodes(n: int, tag: str) -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{tag} turn {i} about the refund",
            "long_summary": f"the customer asked about refund number {i} ({tag})",
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": "c",
        }
        for i in range(n)
    ]


async def _library_calls_on_this_thread(
    mem: EpisodicMemory, episodes: list[dict[str, Any]], batch_size: int
) -> list[str]:
    """The episodex functions `memorize_many` runs on the calling (event loop) thread."""
    calls: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        module = str(frame.f_globals.get("__name__", ""))
        if event == "call" and module.startswith("episodex"):
            calls.append(f"{module}:{frame.f_code.co_qualname}")

    sys.setprofile(profile)  # this thread only: the worker thread is not profiled
    try:
        await mem.memorize_many(episodes, batch_size=batch_size)
    finally:
        sys.setprofile(None)
    return calls


async def test_the_loop_thread_only_hands_the_batch_over(tmp_path: Path, embedder: Any) -> None:
    # The stall a ticker sees is the loop thread's own work plus what the worker holds the
    # GIL for. The first must be the hand-off and nothing else: no validation, embedding,
    # sparse encoding or engine call on the loop, and no work that grows with the batch.
    recorder = RecordingEmbedder(embedder)
    mem = EpisodicMemory(path=tmp_path / "s", embedder=recorder)
    small = await _library_calls_on_this_thread(mem, _episodes(2, "small"), 8)
    large = await _library_calls_on_this_thread(mem, _episodes(24, "large"), 8)
    loop_thread = threading.get_ident()
    mem.close()
    modules = {call.split(":", 1)[0] for call in small + large}
    assert modules <= {"episodex._common.sync"}, small + large
    assert len(large) == len(small), (small, large)  # constant, whatever the batch size
    # The worker embeds in pieces of the batch size (two summaries an episode): each GIL-free
    # model run is bounded, and the engine write between them is one piece's points.
    assert recorder.calls and all(thread != loop_thread for thread, _ in recorder.calls)
    assert max(texts for _, texts in recorder.calls) <= 2 * 8
    assert sum(texts for _, texts in recorder.calls) == 2 * (2 + 24)
