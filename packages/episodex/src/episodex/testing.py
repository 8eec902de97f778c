"""Test helpers for code built on episodex: a deterministic embedder, an engine that fails.

The bundled model is offline and fast, but a unit test often wants vectors it can reason about
exactly: the same text always gives the same vector, texts that share words are close, texts
that share none are far apart. `HashEmbedder` gives that in microseconds, in any dimension.

Example:
    ```python
    from episodex import SyncEpisodicMemory
    from episodex.testing import HashEmbedder

    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    mem.memorize(
        short_summary="Refund for order 42",
        long_summary="The user asked for a refund for order 42.",
        user_id="alice",
        agent_id="support",
        conversation_id="c1",
    )
    found = mem.recall(user_id="alice", agent_id="support", query="refund for my order")
    print(found["previous_conversations"][0]["short_summary_text"])  # -> Refund for order 42
    mem.close()
    ```

`FailingEngine` wraps a real engine and makes its reads or writes fail on demand, to test what
an agent does when its memory is down (it should still answer). `StallingModel` is a summary or
reflection callable whose Nth call never answers, to test what a timeout or a cancelled task
leaves stored (a turn whole, or not at all).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from episodex._common.errors import EngineUnavailableError, ValidationError
from episodex._embedders.base import Matrix
from episodex._engines.base import Engine, StreamRanks
from episodex._engines.plan import CollectionSpec, Filter, Fused, Hit, Point, Search

__all__ = ["FailingEngine", "HashEmbedder", "StallingModel"]

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """A deterministic bag-of-words embedder: exact, cheap vectors for tests.

    Every lower-cased word is hashed (BLAKE2b, so the same on every machine and run) to one of
    the dimensions after the first; the first dimension is always set so that no vector is ever
    zero (the cosine of a zero vector is undefined). Vectors are unit length. It satisfies the
    `Embedder` protocol and is safe to call from several threads.

    `dimension` and `model_id` are deliberately not validated here, so a test can hand a memory
    a malformed embedder and check that the memory refuses it.

    Args:
        dimension: The length of each vector.
        model_id: The id recorded in every store it writes; give two instances different ids
            to test what happens when a store is opened with another model.
    """

    # Never collected by pytest, whatever name a test module imports it under.
    __test__ = False

    def __init__(self, *, dimension: int = 64, model_id: str = "test/hash-bag-of-words") -> None:
        self._dimension = dimension
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        """The id recorded in every store this embedder writes."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The length of each vector."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts; returns an array of shape `(len(texts), dimension)`."""
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack([self._one(text) for text in texts])

    def embed_query(self, text: str) -> Matrix:
        """Embed one text; returns an array of shape `(dimension,)`."""
        return self._one(text)

    def _one(self, text: str) -> Matrix:
        vec = np.zeros(self._dimension, dtype=np.float32)
        vec[0] = 0.5
        buckets = self._dimension - 1
        if buckets > 0:
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vec[1 + int.from_bytes(digest, "little") % buckets] += 1.0
        vec /= np.linalg.norm(vec)  # in place, so the array stays float32
        return vec


_FAILABLE = frozenset({"upsert", "delete", "query", "query_explained", "scroll", "count"})


class FailingEngine:
    """A real engine whose reads or writes fail on demand, as a server that went away does.

    Wraps any `Engine` (the embedded store, qdrant-client's `:memory:`, a server) and satisfies
    the protocol itself: hand it to a memory (`EpisodicMemory(engine=failing, ...)`), then
    set `reads` or `writes` to make the next calls raise `error` before they reach the wrapped
    engine, which is left exactly as it was. Reads are `query`, `query_explained`, `scroll` and
    `count`; writes are `upsert` and `delete`. `fail_next("delete")` makes only the next call
    of one method fail, once: a write that fails part way, after its first engine call went
    through. Creating collections, `optimize` and `close` are always passed on (closing the
    wrapper closes the wrapped engine).

    Args:
        inner: The engine that answers while nothing is set to fail.
        reads: Fail the reads from the start.
        writes: Fail the writes from the start.
        error: What a failing call raises (default: `EngineUnavailableError`, which is what a
            memory raises when its server cannot be reached).
    """

    # Never collected by pytest, whatever name a test module imports it under.
    __test__ = False

    def __init__(
        self,
        inner: Engine,
        *,
        reads: bool = False,
        writes: bool = False,
        error: Exception | None = None,
    ) -> None:
        self.inner = inner
        self.reads = reads
        self.writes = writes
        self.error = error or EngineUnavailableError("the engine is down (FailingEngine)")
        #: How many calls have failed so far.
        self.failures = 0
        self._next: set[str] = set()

    def fail_next(self, method: str) -> None:
        """Make the next call of `method` (`upsert`, `delete`, `query`, ...) fail, once."""
        if method not in _FAILABLE:
            raise ValidationError(
                f"fail_next takes one of {', '.join(sorted(_FAILABLE))}, got {method!r}"
            )
        self._next.add(method)

    def _fail(self, when: bool, method: str) -> None:
        if when or method in self._next:
            self._next.discard(method)
            self.failures += 1
            raise self.error

    @property
    def kind(self) -> str:
        """The wrapped engine's kind."""
        return self.inner.kind

    def ensure_collection(self, spec: CollectionSpec) -> Mapping[str, Any]:
        """Passed on."""
        return self.inner.ensure_collection(spec)

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Fails while `writes` is set."""
        self._fail(self.writes, "upsert")
        self.inner.upsert(collection, points)

    def delete(self, collection: str, flt: Filter) -> None:
        """Fails while `writes` is set."""
        self._fail(self.writes, "delete")
        self.inner.delete(collection, flt)

    def query(self, collection: str, requests: Sequence[Search | Fused]) -> list[list[Hit]]:
        """Fails while `reads` is set."""
        self._fail(self.reads, "query")
        return self.inner.query(collection, requests)

    def query_explained(
        self, collection: str, requests: Sequence[Fused]
    ) -> list[list[tuple[Hit, StreamRanks]]]:
        """Fails while `reads` is set."""
        self._fail(self.reads, "query_explained")
        return self.inner.query_explained(collection, requests)

    def scroll(
        self,
        collection: str,
        flt: Filter,
        *,
        limit: int,
        order_by: str | None = None,
        descending: bool = True,
        with_payload: bool | Sequence[str] = True,
        offset: str | None = None,
    ) -> tuple[list[Hit], str | None]:
        """Fails while `reads` is set."""
        self._fail(self.reads, "scroll")
        return self.inner.scroll(
            collection,
            flt,
            limit=limit,
            order_by=order_by,
            descending=descending,
            with_payload=with_payload,
            offset=offset,
        )

    def count(self, collection: str, flt: Filter) -> int:
        """Fails while `reads` is set."""
        self._fail(self.reads, "count")
        return self.inner.count(collection, flt)

    def optimize(self) -> None:
        """Passed on."""
        self.inner.optimize()

    def close(self) -> None:
        """Closes the wrapped engine."""
        self.inner.close()


class StallingModel:
    """An async text model (`await model(prompt) -> str`) whose call number `stall_at` hangs.

    Every other call answers at once with `reply` formatted with its call number (`{n}`, from
    1). The stalled call sets `stalled` and then waits until it is cancelled, as a model call
    that never answers does under a timeout. Hand it to a memory as its summarizer or
    reflection callable.

    Args:
        stall_at: The call that never answers (from 1).
        reply: The answer of every other call; `{n}` is replaced by the call's number.
    """

    __test__ = False

    def __init__(self, stall_at: int, *, reply: str = "summary {n}") -> None:
        self.calls = 0
        self.stall_at = stall_at
        self.reply = reply
        self.stalled = asyncio.Event()

    async def __call__(self, prompt: str) -> str:
        """Answer, unless this is call `stall_at`."""
        self.calls += 1
        if self.calls == self.stall_at:
            self.stalled.set()
            await asyncio.Event().wait()
        return self.reply.format(n=self.calls)
