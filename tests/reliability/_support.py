"""Shared pieces of the reliability tests: memories on each registered backend, snapshots."""

from __future__ import annotations

import io
import json
import subprocess
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import (
    BACKENDS,
    QDRANT_API_KEY,
    QDRANT_URL,
    engine_options,
    server_prefix,
)
from conformance.backends import drop_server_collections as drop_engine_collections
from episodex import Engine, EngineUnavailableError, EpisodicMemory
from episodex.plan import Filter, Point
from episodex.testing import HashEmbedder

# The backend registry is re-exported: the reliability tests take their backends from here.
__all__ = [
    "BACKENDS",
    "COLLECTION",
    "QDRANT_API_KEY",
    "QDRANT_URL",
    "SEED_EPISODE",
    "TENANT",
    "AppliedThenFailed",
    "StoreDown",
    "drop_server_collections",
    "open_memory",
    "parse_export",
    "recorder_episode",
    "remount",
    "seeded_memory",
    "server_prefix",
    "snapshot",
    "stored_summaries",
    "tmpfs",
    "total_points",
]

COLLECTION = "episodes"


def drop_server_collections(memory: EpisodicMemory) -> None:
    """Delete every collection this (server) memory created."""
    drop_engine_collections(memory.engine)


@contextmanager
def open_memory(backend: str, tmp_path: Any, **kwargs: Any) -> Generator[EpisodicMemory]:
    """A fresh, empty memory on `backend` (edge, memory or server), closed afterwards."""
    path, options = engine_options(backend, Path(tmp_path))
    mem = EpisodicMemory(path, **options, **kwargs)
    try:
        yield mem
    finally:
        if backend == "server":
            drop_server_collections(mem)
        mem.close()


def total_points(memory: EpisodicMemory) -> int:
    """Every episode in the store, across all users and agents."""
    return memory.engine.count(COLLECTION, Filter())


def snapshot(memory: EpisodicMemory) -> list[dict[str, Any]]:
    """Every stored episode (all tenants) as export records, sorted by id: compare before/after."""
    out: list[dict[str, Any]] = []
    offset: str | None = None
    while True:
        hits, offset = memory.engine.scroll(COLLECTION, Filter(), limit=256, offset=offset)
        for h in hits:
            out.append({"id": h.id, **h.payload})
        if offset is None:
            break
    return sorted(out, key=lambda r: r["id"])


def parse_export(text: str) -> list[dict[str, Any]]:
    """The records of a JSONL export."""
    return [json.loads(line) for line in io.StringIO(text) if line.strip()]


@contextmanager
def tmpfs(folder: Path, size: str, what: str) -> Generator[Path]:
    """A tmpfs of `size` mounted on `folder` (made here) while in use; fails the test if the
    machine allows no mount (the tests that need one run as root, as CI does)."""
    folder.mkdir()
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mount.returncode != 0:
        pytest.fail(
            f"{what} NOT RUN: cannot mount a {size} tmpfs here "
            f"({mount.stderr.strip() or mount.returncode}); run it as root on a machine that "
            "allows tmpfs mounts"
        )
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def remount(disk: Path, mode: str) -> None:
    """Remount the tmpfs of the `spill_disk` fixture `ro` or `rw`."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(disk)], check=True)


def recorder_episode(n: int, **extra: Any) -> dict[str, Any]:
    """Episode `n` of user u1's conversation c1 with `support`, as the recorder tests queue it."""
    return {
        "short_summary": f"question {n}",
        "long_summary": f"User asked question {n}; the agent answered it.",
        "user_id": "u1",
        "agent_id": "support",
        "conversation_id": "c1",
        **extra,
    }


def stored_summaries(memory: EpisodicMemory, user_id: str = "u1") -> list[str]:
    """The short summaries of everything the user's `support` agent has stored, sorted."""
    return sorted(
        r["short_summary_text"]
        for r in memory.store.read_recent(1000, user_id=user_id, agent_id="support")
    )


class StoreDown:
    """Put in place of `memory.store.memorize_many`: writes fail while `down` (a restart)."""

    def __init__(self, memory: EpisodicMemory) -> None:
        self.real = memory.store.memorize_many
        self.down = True

    @classmethod
    def put_in(cls, memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch) -> StoreDown:
        """Take the place of `memory`'s store writes for the test; returns the switch."""
        down = cls(memory)
        monkeypatch.setattr(memory.store, "memorize_many", down)
        return down

    def __call__(self, episodes: Any, **kwargs: Any) -> list[str]:
        if self.down:
            raise EngineUnavailableError("connection refused (injected)")
        return self.real(episodes, **kwargs)


#: The user and agent of `seeded_memory`'s one episode.
TENANT: dict[str, Any] = {"user_id": "u", "agent_id": "a"}
SEED_EPISODE: dict[str, Any] = {
    **TENANT,
    "short_summary": "refund for order 1234",
    "long_summary": "the user asked for a refund",
    "conversation_id": "c",
}


@contextmanager
def seeded_memory(folder: Path) -> Generator[EpisodicMemory]:
    """An embedded memory in `folder` with the test embedder, holding `SEED_EPISODE`."""
    mem = EpisodicMemory(folder, embedder=HashEmbedder(dimension=32), splade=False)
    try:
        mem.store.memorize_many([SEED_EPISODE])
        yield mem
    finally:
        mem.close()


class AppliedThenFailed:
    """An engine whose next upsert, once `failing` is set, is applied and then raises.

    As a Qdrant server that applied a write and failed to answer: it reports the kind
    `server`, so the stores take such writes back. The tests wrap qdrant-client's `:memory:`.
    """

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.failing = False
        self.kind = "server"

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.inner.upsert(collection, points)
        if self.failing:
            self.failing = False  # the take-back's own writes go through
            raise EngineUnavailableError("upsert failed: the Qdrant server timed out")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class FirstWriteWaits:
    """Put in place of `memory.store.memorize_many`: the first write waits until `go` is set.

    It waits before it stores, or with `stored_first` after. `entered` is set when it begins
    to wait; `guard` seconds only guard against a deadlock, never decide how calls meet.
    """

    def __init__(
        self, memory: EpisodicMemory, *, stored_first: bool = False, guard: float = 60
    ) -> None:
        self.real = memory.store.memorize_many
        self.stored_first = stored_first
        self.guard = guard
        self.entered = threading.Event()
        self.go = threading.Event()

    def __call__(self, episodes: Any, **kwargs: Any) -> list[str]:
        ids = self.real(episodes, **kwargs) if self.stored_first else None
        if not self.entered.is_set():
            self.entered.set()
            assert self.go.wait(self.guard)
        return self.real(episodes, **kwargs) if ids is None else ids
