"""`VectorCacheEmbedder.hits` and `.misses` count every text of calls made at the same time.

They were updated with `self.hits += n`: a read, then a write, with the caller's code (the
texts' `len()`) and any thread switch able to run in between, so a call made meanwhile on
another thread had its count overwritten and lost. They are now added under a lock, with
nothing but the addition between reading and writing them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import overload

from episodex import VectorCacheEmbedder
from episodex.testing import HashEmbedder


class Interleaved(Sequence[str]):
    """Texts whose first `len()` runs `meanwhile`: another thread's call, switched to there."""

    def __init__(self, texts: list[str], meanwhile: Callable[[], object]) -> None:
        self._texts = texts
        self._meanwhile: Callable[[], object] | None = meanwhile

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._texts[index]

    def __len__(self) -> int:
        meanwhile, self._meanwhile = self._meanwhile, None
        if meanwhile is not None:
            meanwhile()
        return len(self._texts)


def _cache() -> tuple[VectorCacheEmbedder, list[str]]:
    inner = HashEmbedder()
    known = ["refund for order 1", "refund for order 2"]
    return VectorCacheEmbedder(
        inner, dict(zip(known, inner.embed_documents(known), strict=True))
    ), known


def test_a_call_made_during_another_is_counted() -> None:
    cache, known = _cache()
    other = threading.Thread(target=cache.embed_documents, args=([*known, "new text"],))
    cache.embed_documents(
        Interleaved([*known, "other new text"], lambda: (other.start(), other.join()))
    )
    assert (cache.hits, cache.misses) == (4, 2)


def test_calls_from_many_threads_are_all_counted() -> None:
    cache, known = _cache()
    barrier = threading.Barrier(8)

    def work(n: int) -> None:
        barrier.wait()
        for i in range(200):
            cache.embed_documents([*known, f"text {n} {i}"])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (cache.hits, cache.misses) == (8 * 200 * 2, 8 * 200)
