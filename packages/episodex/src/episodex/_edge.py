"""Qdrant Edge backend: the Qdrant engine in process, one shard folder per collection."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from episodex._engine import StreamRanks, explain_fused, stream_searches
from episodex._errors import ConfigurationError, EngineError, StoreLockedError
from episodex._plan import (
    CollectionSpec,
    Condition,
    Filter,
    Fused,
    Hit,
    Match,
    MatchAny,
    MatchExcept,
    Point,
    Range,
    Search,
    SparseVec,
    Stream,
)

__all__ = ["EdgeEngine"]

_MANIFEST = "episodex.json"


def _condition(cond: Condition) -> Any:
    if isinstance(cond, Match):
        return qe.FieldCondition(cond.key, match=qe.MatchValue(cond.value))
    if isinstance(cond, MatchAny):
        return qe.FieldCondition(cond.key, match=qe.MatchAny(list(cond.values)))
    if isinstance(cond, MatchExcept):
        return qe.FieldCondition(cond.key, match=qe.MatchExcept(list(cond.values)))
    if isinstance(cond, Range):
        return qe.FieldCondition(
            cond.key, range=qe.RangeFloat(gte=cond.gte, gt=cond.gt, lte=cond.lte, lt=cond.lt)
        )
    return qe.HasIdCondition(set(cond.ids))


def render_filter(flt: Filter) -> qe.Filter:
    """Render a plan filter as a Qdrant Edge filter."""
    return qe.Filter(
        must=[_condition(c) for c in flt.must] or None,
        must_not=[_condition(c) for c in flt.must_not] or None,
    )


def _vector(vec: list[float] | SparseVec) -> Any:
    if isinstance(vec, SparseVec):
        return qe.SparseVector(vec.indices, vec.values)
    return vec


def _prefetch(stream: Stream, flt: qe.Filter) -> qe.Prefetch:
    return qe.Prefetch(
        limit=stream.limit, query=qe.Query.Nearest(_vector(stream.vector), using=stream.using), filter=flt
    )


def _payload_selector(with_payload: bool | Sequence[str]) -> Any:
    if isinstance(with_payload, bool):
        return with_payload
    return qe.PayloadSelector.Include(list(with_payload))


def render_request(req: Search | Fused) -> qe.QueryRequest:
    """Render a plan search as a Qdrant Edge query request."""
    flt = render_filter(req.filter)
    if isinstance(req, Search):
        return qe.QueryRequest(
            limit=req.limit,
            query=qe.Query.Nearest(_vector(req.stream.vector), using=req.stream.using),
            filter=flt,
            with_payload=_payload_selector(req.with_payload),
            score_threshold=req.score_threshold,
        )
    return qe.QueryRequest(
        limit=req.limit,
        prefetches=[_prefetch(s, flt) for s in req.streams],
        # The stub types `query` as Fusion; Rrf is Fusion's nested variant and is accepted.
        query=qe.Fusion.Rrf(k=req.k, weights=list(req.weights)),  # pyright: ignore[reportArgumentType]
        filter=flt,
        with_payload=_payload_selector(req.with_payload),
    )


def _hit(point: Any) -> Hit:
    # A hot path (hundreds of hits per recall): the bindings already return fresh objects.
    return Hit(str(point.id), point.score, point.payload or {})


def _native_id(point: Any) -> Any:
    return point.id


def _record(record: Any) -> Hit:
    return Hit(str(record.id), 0.0, record.payload or {})


def _engine_error(exc: Exception, what: str) -> EngineError:
    text = str(exc)
    if "WouldBlock" in text or "lock" in text.lower():
        return StoreLockedError(
            f"{what}: the store folder is open in another process or another memory object "
            f"({text}); close that one first, or use a Qdrant server for shared access"
        )
    return EngineError(f"{what}: {text}")


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EngineError(
            f"{path} is unreadable ({exc}): it records which embedder made this collection; "
            "restore it from a backup, or move the store folder aside and re-import an export"
        ) from exc
    if not isinstance(data, dict):
        raise EngineError(f"{path} does not hold a JSON object; restore it from a backup")
    return data


class EdgeEngine:
    """Qdrant Edge in process, persistent in a folder: one sub-folder (shard) per collection.

    Each shard has its write-ahead log, HNSW indexes and payload indexes. A shard folder can be
    open in one place at a time: a second open raises `StoreLockedError`.

    Args:
        path: The store folder; created if missing.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._root = Path(path)
        try:
            self._root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the store folder {self._root}: {exc}") from exc
        self._shards: dict[str, qe.EdgeShard] = {}
        self._lock = threading.RLock()
        self._closed = False

    @property
    def kind(self) -> str:
        """`edge`."""
        return "edge"

    @property
    def root(self) -> Path:
        """The store folder."""
        return self._root

    def _shard(self, collection: str) -> qe.EdgeShard:
        if self._closed:
            raise EngineError("the store is closed")
        try:
            return self._shards[collection]
        except KeyError:
            raise EngineError(f"collection {collection!r} is not open") from None

    def ensure_collection(self, spec: CollectionSpec) -> Mapping[str, Any]:
        """Open the collection's shard, creating it and its payload indexes if missing."""
        with self._lock:
            folder = self._root / spec.name
            manifest = folder / _MANIFEST
            if spec.name in self._shards:
                return _read_manifest(manifest) if manifest.exists() else {}
            if manifest.exists():
                stored = _read_manifest(manifest)
                try:
                    shard = qe.EdgeShard.load(str(folder))
                except Exception as exc:
                    raise _engine_error(exc, f"cannot open {folder}") from exc
                self._shards[spec.name] = shard
                return stored
            config = qe.EdgeConfig(
                vectors={
                    name: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)
                    for name, dim in spec.dense.items()
                },
                sparse_vectors={
                    name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf) for name in spec.sparse
                },
                # Every search is filtered by tenant, so build per-tenant HNSW graphs instead of a
                # global one (Qdrant's multitenancy guidance: m=0, payload_m=16).
                hnsw_config=qe.HnswIndexConfig(
                    m=0 if spec.tenant_key else 16, ef_construct=100, full_scan_threshold=10_000,
                    payload_m=16 if spec.tenant_key else None,
                ),
            )
            try:
                if (folder / "edge_config.json").exists():
                    # A crash between creating the shard and writing the manifest: reuse it.
                    shard = qe.EdgeShard.load(str(folder))
                else:
                    shard = qe.EdgeShard.create(str(folder), config)
                if spec.tenant_key:
                    shard.update(
                        qe.UpdateOperation.create_field_index(
                            spec.tenant_key, qe.KeywordIndexParams(is_tenant=True)
                        )
                    )
                for key in spec.keywords:
                    shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
                for key in spec.floats:
                    shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Float))
                for key in spec.integers:
                    shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Integer))
                shard.flush()
            except Exception as exc:
                raise _engine_error(exc, f"cannot create {folder}") from exc
            # The manifest is written last and atomically: its presence means "fully created".
            tmp = manifest.with_suffix(".tmp")
            tmp.write_text(json.dumps(dict(spec.metadata), sort_keys=True))
            tmp.replace(manifest)
            self._shards[spec.name] = shard
            return dict(spec.metadata)

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace points in one update operation."""
        if not points:
            return
        rendered = [
            qe.Point(
                p.id,
                {**p.dense, **{k: _vector(v) for k, v in p.sparse.items()}},
                dict(p.payload),
            )
            for p in points
        ]
        with self._lock:
            shard = self._shard(collection)
            try:
                shard.update(qe.UpdateOperation.upsert_points(rendered))
            except Exception as exc:
                raise _engine_error(exc, "upsert failed") from exc

    def delete(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt`."""
        with self._lock:
            shard = self._shard(collection)
            try:
                shard.update(qe.UpdateOperation.delete_points_by_filter(render_filter(flt)))
            except Exception as exc:
                raise _engine_error(exc, "delete failed") from exc

    def query(self, collection: str, requests: Sequence[Search | Fused]) -> list[list[Hit]]:
        """Run the requests as one batch."""
        rendered = [render_request(r) for r in requests]
        with self._lock:
            shard = self._shard(collection)
            try:
                if len(rendered) == 1:
                    answers = [shard.query(rendered[0])]
                else:
                    answers = shard.query_batch(qe.QueryBatchRequest(rendered))
            except Exception as exc:
                raise _engine_error(exc, "query failed") from exc
        return [[_hit(p) for p in answer] for answer in answers]

    def query_explained(
        self, collection: str, requests: Sequence[Fused]
    ) -> list[list[tuple[Hit, StreamRanks]]]:
        """Fused searches with each hit's stream ranks, in one batch."""
        rendered = [render_request(r) for r in [*requests, *stream_searches(requests)]]
        with self._lock:
            shard = self._shard(collection)
            try:
                answers = shard.query_batch(qe.QueryBatchRequest(rendered))
            except Exception as exc:
                raise _engine_error(exc, "query failed") from exc
        return explain_fused(requests, answers, _native_id, _hit)

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
        """Page through matching points."""
        order = None
        if order_by is not None:
            direction = qe.Direction.Desc if descending else qe.Direction.Asc
            order = qe.OrderBy(order_by, direction=direction)
        request = qe.ScrollRequest(
            offset=offset if order is None else None,
            limit=limit,
            filter=render_filter(flt),
            with_payload=_payload_selector(with_payload),
            with_vector=False,
            order_by=order,
        )
        with self._lock:
            shard = self._shard(collection)
            try:
                records, next_offset = shard.scroll(request)
            except Exception as exc:
                raise _engine_error(exc, "scroll failed") from exc
        hits = [_record(r) for r in records]
        return hits, (None if order is not None or next_offset is None else str(next_offset))

    def count(self, collection: str, flt: Filter) -> int:
        """Count matching points exactly."""
        with self._lock:
            shard = self._shard(collection)
            try:
                return int(shard.count(qe.CountRequest(exact=True, filter=render_filter(flt))))
            except Exception as exc:
                raise _engine_error(exc, "count failed") from exc

    def optimize(self) -> None:
        """Run Qdrant's segment optimizers (HNSW build, merges) on every open shard."""
        with self._lock:
            for shard in self._shards.values():
                shard.optimize()

    def flush(self) -> None:
        """Flush every shard's segments to disk (the WAL already makes writes durable)."""
        with self._lock:
            for shard in self._shards.values():
                shard.flush()

    def close(self) -> None:
        """Flush and close every shard."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for shard in self._shards.values():
                try:
                    shard.flush()
                finally:
                    shard.close()
            self._shards.clear()
