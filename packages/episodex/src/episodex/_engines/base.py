"""The store protocol every vector backend implements, and how a memory picks one.

Two backends implement `Engine`: `EdgeEngine` (Qdrant Edge, in process, one folder per
collection) and `QdrantClientEngine` (qdrant-client: a server, a cluster, or `:memory:`).
Both render the same `_plan` objects. Engines are synchronous and thread-safe; the memory
classes call them from worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from episodex._common.errors import ConfigurationError
from episodex._engines.plan import CollectionSpec, Filter, Fused, HasId, Hit, Point, Search

__all__ = ["Engine", "StreamRanks", "explain_fused", "foreign_claims", "open_engine", "stream_searches"]

#: For one hit: stream name -> (rank from 1, that stream's score).
StreamRanks = dict[str, tuple[int, float]]


@runtime_checkable
class Engine(Protocol):
    """A vector engine holding named collections of points with dense and sparse vectors."""

    @property
    def kind(self) -> str:
        """`edge`, `memory` (qdrant-client local mode) or `server`."""
        ...

    def ensure_collection(self, spec: CollectionSpec) -> Mapping[str, Any]:
        """Create the collection if it is missing; return the metadata it was created with."""
        ...

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace points, all or nothing."""
        ...

    def delete(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt` (there is no unfiltered delete)."""
        ...

    def query(self, collection: str, requests: Sequence[Search | Fused]) -> list[list[Hit]]:
        """Run searches as one batch; one list of hits per request, best first."""
        ...

    def query_explained(
        self, collection: str, requests: Sequence[Fused]
    ) -> list[list[tuple[Hit, StreamRanks]]]:
        """Run fused searches and, in the same batch, each of their streams alone.

        Returns, for each request, its fused hits (best first), each with the rank (from 1)
        and score that every stream that found it gave it.
        """
        ...

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
        """Page through matching points; ordered by a float payload key when `order_by` is set.

        Returns the page and the offset of the next page (None at the end, and always None when
        ordering, where a page is the whole answer).
        """
        ...

    def count(self, collection: str, flt: Filter) -> int:
        """Count matching points exactly."""
        ...

    def optimize(self) -> None:
        """Build indexes and merge segments now (a no-op where the engine does it itself)."""
        ...

    def close(self) -> None:
        """Flush and release the engine; idempotent."""
        ...


def open_engine(
    *,
    path: str | None = None,
    url: str | None = None,
    location: str | None = None,
    api_key: str | None = None,
    prefer_grpc: bool = False,
    collection_prefix: str = "episodex_",
    timeout: float | None = None,
    client_options: Mapping[str, Any] | None = None,
) -> Engine:
    """Open the engine chosen by exactly one of `path`, `url` or `location`.

    Args:
        path: A folder for the embedded Qdrant Edge store (created if missing).
        url: A Qdrant server or cluster, e.g. `http://localhost:6333`.
        location: `:memory:` for qdrant-client's local mode.
        api_key: Qdrant API key (server only).
        prefer_grpc: Talk gRPC to the server.
        collection_prefix: Prefix of server collection names.
        timeout: Request timeout in seconds (server only).
        client_options: More keyword arguments for `qdrant_client.QdrantClient`.
    """
    chosen = [name for name, value in (("path", path), ("url", url), ("location", location)) if value]
    if len(chosen) != 1:
        raise ConfigurationError(
            "give exactly one of path= (embedded Qdrant Edge folder), url= (Qdrant server) or "
            f"location=':memory:' (qdrant-client local mode); got {chosen or 'none'}"
        )
    if path:
        from episodex._engines.edge import EdgeEngine

        return EdgeEngine(path)
    from episodex._engines.qdrant import QdrantClientEngine

    if location is not None and location != ":memory:":
        raise ConfigurationError(
            f"location must be ':memory:', got {location!r}; use path= for a folder on disk"
        )
    return QdrantClientEngine(
        url=url,
        location=location,
        api_key=api_key,
        prefer_grpc=prefer_grpc,
        prefix=collection_prefix,
        timeout=timeout,
        options=dict(client_options or {}),
    )


def foreign_claims(
    engine: Engine,
    collection: str,
    claims: Sequence[tuple[str, tuple[str, ...]]],
    owner_keys: Sequence[str],
    *,
    id_field: str = "id",
) -> dict[int, str]:
    """Positions of `(point_id, owner)` claims whose id belongs to another owner, and why.

    Writing an existing id replaces that point, so an explicit id must never reach a point of
    another tenant, whether stored already or claimed earlier in the same batch. `owner` holds
    the values of `owner_keys` (e.g. user and agent) the writer will store; `id_field` names
    the id in messages.
    """
    owners = " or ".join(k.removesuffix("_id") for k in owner_keys)
    first: dict[str, tuple[str, ...]] = {}
    foreign: dict[int, str] = {}
    for i, (point_id, owner) in enumerate(claims):
        if first.setdefault(point_id, owner) != owner:
            foreign[i] = f"{id_field} {point_id!r} is used by another {owners} earlier in the batch"
    ids = tuple(first)
    stored: dict[str, tuple[Any, ...]] = {}
    for start in range(0, len(ids), 1024):
        chunk = ids[start : start + 1024]
        hits, _ = engine.scroll(
            collection, Filter(must=(HasId(chunk),)), limit=len(chunk), with_payload=tuple(owner_keys)
        )
        stored.update((h.id, tuple(h.payload.get(k) for k in owner_keys)) for h in hits)
    for i, (point_id, owner) in enumerate(claims):
        if point_id in stored and stored[point_id] != owner:
            foreign.setdefault(
                i,
                f"{id_field} {point_id!r} already belongs to another {owners}; omit {id_field} to "
                "store a new record",
            )
    return foreign


def stream_searches(requests: Sequence[Fused]) -> list[Search]:
    """Each fused request's streams as id-only searches, in request then stream order."""
    return [
        Search(stream=s, filter=r.filter, limit=s.limit, with_payload=False)
        for r in requests
        for s in r.streams
    ]


def explain_fused(
    requests: Sequence[Fused],
    answers: Sequence[Sequence[Any]],
    native_id: Callable[[Any], Any],
    to_hit: Callable[[Any], Hit],
) -> list[list[tuple[Hit, StreamRanks]]]:
    """Pair each fused hit with its stream ranks, from a batch of fused + `stream_searches`.

    Rank tables are keyed by the engine's own id objects, so the hundreds of stream hits that
    did not make the fused top are never converted to `Hit`s (the hot path of a recall).
    """
    out: list[list[tuple[Hit, StreamRanks]]] = []
    position = len(requests)
    for index, request in enumerate(requests):
        tables: list[tuple[str, dict[Any, tuple[int, float]]]] = []
        for stream in request.streams:
            table = {native_id(p): (rank, p.score) for rank, p in enumerate(answers[position], start=1)}
            tables.append((stream.using, table))
            position += 1
        explained: list[tuple[Hit, StreamRanks]] = []
        for point in answers[index]:
            key = native_id(point)
            explained.append((to_hit(point), {using: t[key] for using, t in tables if key in t}))
        out.append(explained)
    return out
