"""`memorize_many` embeds and writes off the event loop: a ticker task keeps ticking meanwhile."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
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
