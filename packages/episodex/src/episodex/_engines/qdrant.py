"""qdrant-client backend: a Qdrant server or cluster, or qdrant-client's `:memory:` local mode."""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError

from episodex._common.errors import (
    ConfigurationError,
    EngineError,
    EngineUnavailableError,
    StoreClosedError,
)
from episodex._common.validation import is_real
from episodex._engines.base import (
    STAGING_MARK,
    StreamRanks,
    answer_batch,
    bad_page_token,
    cap_count,
    explain_fused,
    is_staging_copy,
    ordered_page,
    refuse_bad_vectors,
    stream_searches,
)
from episodex._engines.collection import delete_checked
from episodex._engines.plan import (
    CollectionSpec,
    Condition,
    Filter,
    Fused,
    HasId,
    Hit,
    Match,
    MatchAny,
    MatchExcept,
    Point,
    Range,
    Search,
    SparseVec,
)

try:
    from qdrant_client import QdrantClient, models
    from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
except ImportError as exc:
    raise ImportError(
        "url= and location= need qdrant-client, a dependency of episodex that is missing from "
        'this environment: pip install "episodex" (or: pip install qdrant-client)'
    ) from exc

__all__ = ["REINDEXING", "QdrantClientEngine"]

#: The collection metadata entry a re-index on a server sets before its last catch-up: the
#: staging collection it copies the collection to (`QdrantClientEngine.mark_reindexing`).
REINDEXING = "reindexing_to"

_log = logging.getLogger("episodex")


def _create_alias(alias: str, collection: str) -> Any:
    return models.CreateAliasOperation(
        create_alias=models.CreateAlias(collection_name=collection, alias_name=alias)
    )


T = TypeVar("T")


def _condition(cond: Condition) -> Any:
    if isinstance(cond, Match):
        return models.FieldCondition(key=cond.key, match=models.MatchValue(value=cond.value))
    if isinstance(cond, MatchAny):
        return models.FieldCondition(key=cond.key, match=models.MatchAny(any=list(cond.values)))
    if isinstance(cond, MatchExcept):
        return models.FieldCondition(
            key=cond.key, match=models.MatchExcept(**{"except": list(cond.values)})
        )
    if isinstance(cond, Range):
        return models.FieldCondition(
            key=cond.key, range=models.Range(gt=cond.gt, gte=cond.gte, lt=cond.lt, lte=cond.lte)
        )
    if isinstance(cond, Filter):
        return render_filter(cond)
    assert isinstance(cond, HasId)
    return models.HasIdCondition(has_id=list(cond.ids))


def render_filter(flt: Filter) -> models.Filter:
    """Render a plan filter as a qdrant-client filter."""
    return models.Filter(
        must=[_condition(c) for c in flt.must] or None,
        must_not=[_condition(c) for c in flt.must_not] or None,
    )


def _page_offset(offset: object) -> str | None:
    """A scroll token as the engine takes it: the id of a point, a UUID on every collection."""
    if offset is None:
        return None
    try:
        return str(uuid.UUID(offset))  # pyright: ignore[reportArgumentType]
    except (ValueError, AttributeError, TypeError):
        raise bad_page_token(offset, "a UUID") from None


def _vector(vec: list[float] | SparseVec) -> Any:
    if isinstance(vec, SparseVec):
        return models.SparseVector(indices=vec.indices, values=vec.values)
    return vec


def _with_payload(with_payload: bool | Sequence[str]) -> Any:
    return with_payload if isinstance(with_payload, bool) else list(with_payload)


def render_request(req: Search | Fused) -> models.QueryRequest:
    """Render a plan search as a qdrant-client query request."""
    if isinstance(req, Search):
        return models.QueryRequest(
            query=_vector(req.stream.vector),
            using=req.stream.using,
            filter=render_filter(req.stream.narrowed(req.filter)),
            limit=cap_count(req.limit),
            with_payload=_with_payload(req.with_payload),
            score_threshold=req.score_threshold,
        )
    flt = render_filter(req.filter)
    return models.QueryRequest(
        prefetch=[
            # Qdrant's RRF over a single list scores rank r (from 1) as 1 / (r + k' - 1): with
            # k' = k + 1 that is 1 / (k + r), which the formula below weights.
            models.Prefetch(
                prefetch=[
                    models.Prefetch(
                        query=_vector(s.vector),
                        using=s.using,
                        limit=cap_count(s.limit),
                        filter=flt if s.filter is None else render_filter(s.narrowed(req.filter)),
                    )
                ],
                query=models.RrfQuery(rrf=models.Rrf(k=cap_count(req.k + 1))),
                limit=cap_count(s.limit),
            )
            for s in req.streams
        ],
        query=models.FormulaQuery(
            formula=models.SumExpression(
                sum=[
                    models.MultExpression(mult=[w, f"$score[{i}]"])
                    for i, w in enumerate(req.weights)
                ]
            ),
            # A hit one stream did not find gets nothing from it.
            defaults={f"$score[{i}]": 0.0 for i in range(len(req.streams))},
        ),
        # No filter here: the formula scores only what the filtered searches found.
        limit=cap_count(req.limit),
        with_payload=_with_payload(req.with_payload),
    )


def _hit(point: Any) -> Hit:
    return Hit(
        id=str(point.id),
        score=float(getattr(point, "score", 0.0) or 0.0),
        payload=dict(point.payload or {}),
    )


class _ServerScope:
    """One server address and collection prefix, shared by this process's engines on it."""


_scopes: weakref.WeakValueDictionary[tuple[str, str], _ServerScope] = weakref.WeakValueDictionary()
_scopes_lock = threading.Lock()


def _server_scope(url: str, prefix: str) -> _ServerScope:
    key = (url.rstrip("/").lower(), prefix)
    with _scopes_lock:
        scope = _scopes.get(key)
        if scope is None:
            scope = _scopes[key] = _ServerScope()
        return scope


# The user (and password) part of a URL's authority: `https://user:password@host`.
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?(?P<userinfo>[^/?#]*)@")


def _shown_url(url: str) -> str:
    """`url` as a message may show it: no user, password or query (where keys travel)."""
    shown = _USERINFO.sub(lambda m: f"{m['scheme'] or ''}***@", url, count=1)
    base, query, _ = shown.partition("?")
    return f"{base}?***" if query else base


def _secrets(url: str, api_key: str | None) -> list[tuple[str, str]]:
    """What to replace in a message so that no credential of `url` or `api_key` shows."""
    hidden = [(url, _shown_url(url))]
    found = _USERINFO.match(url)
    if found and found["userinfo"]:
        hidden.append((found["userinfo"], "***"))
    _, _, query = url.partition("?")
    if query:
        hidden.append((query, "***"))
    if api_key:
        hidden.append((api_key, "***"))
    return hidden


def _request_timeout(timeout: object) -> int:
    """The per-request timeout qdrant-client takes: whole seconds, rounded up, never 0."""
    if not is_real(timeout) or not math.isfinite(float(timeout)) or float(timeout) <= 0:
        raise ConfigurationError(
            f"timeout must be a positive number of seconds, got {timeout!r}; leave it out for "
            "qdrant-client's 5 seconds"
        )
    # qdrant-client takes whole seconds; cut down, 0.5 became 0 and every request failed.
    return math.ceil(float(timeout))


def _not_understood(exc: Exception) -> bool:
    """Whether `exc` says a server answered with what is not a Qdrant answer.

    A proxy's page, another service on the port, a server of another version: asking again
    gets the same answer, so it is not an outage to retry.
    """
    if isinstance(exc, ResponseHandlingException):
        # qdrant-client wraps an answer its models cannot read (a 200 with another shape).
        return isinstance(exc.source, PydanticValidationError)
    # A body that is not JSON; an answer qdrant-client checks and finds empty ("... returned
    # None", its asserts).
    return isinstance(exc, json.JSONDecodeError | AssertionError)


def _transient(exc: Exception) -> bool:
    if isinstance(exc, ResponseHandlingException):
        return True  # connection refused, timeouts: raised before any answer
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code in (429, 502, 503, 504)
    if isinstance(exc, ResourceExhaustedResponse):
        return True  # qdrant-client's own class for a 429 that says when to come back
    name = type(exc).__name__
    return name in {"ConnectError", "ConnectTimeout", "ReadTimeout", "RemoteProtocolError"} or (
        "UNAVAILABLE" in str(exc)
    )


class QdrantClientEngine:
    """A Qdrant server or cluster through qdrant-client, or its `:memory:` local mode.

    On a server, each collection partitions tenants by a keyword index with `is_tenant=true` and
    builds per-tenant HNSW graphs (`m=0`, `payload_m=16`), following Qdrant's multitenancy
    guidance; the other filtered keys get keyword or float indexes. Transient failures
    (connection errors, 429/502/503/504) are retried with exponential backoff before
    `EngineUnavailableError` is raised.

    Args:
        url: Server URL; None with `location` for local mode.
        location: `:memory:` for local mode.
        api_key: Server API key.
        prefer_grpc: Use gRPC.
        prefix: Prefix of collection names on the server.
        timeout: Seconds each request may take (rounded up to whole seconds, as qdrant-client
            takes them); None for qdrant-client's 5. A server that never answers ends in
            `EngineUnavailableError` after `retries + 1` attempts: about
            `(retries + 1) * timeout` seconds plus the backoff (1.4 s by default).
        options: More `QdrantClient` keyword arguments.
        retries: Extra attempts for transient failures.
        backoff: First retry delay in seconds, doubled each time.
    """

    def __init__(
        self,
        *,
        url: str | None,
        location: str | None,
        api_key: str | None = None,
        prefer_grpc: bool = False,
        prefix: str = "episodex_",
        timeout: float | None = None,
        options: dict[str, Any] | None = None,
        retries: int = 3,
        backoff: float = 0.2,
    ) -> None:
        kwargs: dict[str, Any] = dict(options or {})
        if timeout is not None:
            kwargs["timeout"] = _request_timeout(timeout)
        #: Each credential in `url` or `api_key` and what a message shows instead.
        self._secrets = _secrets(url, api_key) if url else []
        self._where = f" at {_shown_url(url)}" if url else ""
        if url:
            try:
                self._client = QdrantClient(
                    url=url, api_key=api_key, prefer_grpc=prefer_grpc, **kwargs
                )
            except ValueError as exc:  # qdrant-client's (and urllib3's) messages show the url
                raise ConfigurationError(
                    f"url={_shown_url(url)!r} is not a Qdrant server URL ({self._hide(exc)}); "
                    "give one like http://localhost:6333"
                ) from None
            self._kind = "server"
        else:
            self._client = QdrantClient(location=location, **kwargs)
            self._kind = "memory"
        self._prefix = prefix
        # Engines of one process on the same server and prefix share write locks (`locks.py`).
        self._scope: object | None = _server_scope(url, prefix) if url else None
        self._retries = retries
        self._backoff = backoff
        # Local mode keeps plain Python dicts: one caller at a time. The HTTP client is safe.
        self._lock: AbstractContextManager[Any] = (
            threading.RLock() if self._kind == "memory" else nullcontext()
        )
        self._closed = False

    @property
    def kind(self) -> str:
        """`server` or `memory`."""
        return self._kind

    @property
    def storage_scope(self) -> object:
        """The server and prefix this engine writes to (local mode: this engine alone)."""
        return self._scope or self

    @property
    def client(self) -> QdrantClient:
        """The underlying qdrant-client, for administration."""
        return self._client

    def _hide(self, exc: BaseException) -> str:
        """`exc` as a message may show it, without the server's credentials."""
        text = str(exc)
        for secret, shown in self._secrets:
            text = text.replace(secret, shown)
        return text

    def _name(self, collection: str) -> str:
        return f"{self._prefix}{collection}"

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        delay = self._backoff
        for attempt in range(self._retries + 1):
            try:
                with self._lock:
                    # Checked under the lock `close` takes: a call never meets a client
                    # closed under it, and a closed engine refuses as the embedded one does.
                    if self._closed:
                        raise StoreClosedError("the store is closed; open it again")
                    return fn()
            except StoreClosedError:
                raise
            except Exception as exc:
                if self._closed:  # a server client closed under the call (no lock there)
                    raise StoreClosedError(
                        f"{what} failed: the store was closed while it ran; open it again"
                    ) from exc
                if self._kind == "server" and _not_understood(exc):
                    raise EngineError(
                        f"{what} failed: the answer of the Qdrant server{self._where} was not "
                        f"understood ({self._hide(exc)}); check that url= names a Qdrant server "
                        "(not a proxy or another service) of a version this qdrant-client reads"
                    ) from exc
                if not _transient(exc):
                    raise EngineError(f"{what} failed{self._where}: {self._hide(exc)}") from exc
                if attempt == self._retries:
                    raise EngineUnavailableError(
                        f"{what} failed: the Qdrant server{self._where} is unreachable after "
                        f"{self._retries + 1} attempts ({self._hide(exc)}); check url= and that "
                        "it is running"
                    ) from exc
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def ensure_collection(self, spec: CollectionSpec) -> Mapping[str, Any]:
        """Create the collection and its payload indexes if missing; return its metadata."""
        name = self._name(spec.name)

        def run() -> Mapping[str, Any]:
            if self._client.collection_exists(name):
                info = self._client.get_collection(name)
                if self._kind == "server":
                    # A store made by an older release lacks the indexes newer filters use, and
                    # one whose making was cut off after `create_collection` lacks any of them
                    # (without its range index, every ordered read of the key fails).
                    self._create_indexes(name, spec, set(info.payload_schema or {}), repair=True)
                return dict(info.config.metadata or {})
            switched = self._finish_switch(spec.name)
            if switched is not None:
                return switched
            server = self._kind == "server"
            self._client.create_collection(
                name,
                vectors_config={
                    v: models.VectorParams(size=dim, distance=models.Distance.COSINE)
                    for v, dim in spec.dense.items()
                },
                sparse_vectors_config={
                    **{
                        s: models.SparseVectorParams(modifier=models.Modifier.IDF)
                        for s in spec.sparse
                    },
                    **{s: models.SparseVectorParams() for s in spec.sparse_plain},
                },
                hnsw_config=models.HnswConfigDiff(m=0, payload_m=16)
                if server and spec.tenant_key
                else None,
                metadata=dict(spec.metadata),
            )
            # Local mode ignores payload indexes (and warns); a server needs them for speed.
            if server:
                self._create_indexes(name, spec, set(), repair=False)
            return dict(spec.metadata)

        return self._call("create collection", run)

    def _create_indexes(
        self, name: str, spec: CollectionSpec, have: set[str], *, repair: bool
    ) -> None:
        """Create the payload indexes of `spec` that the server collection `name` lacks.

        With `repair` (a collection that already existed), an index the server refuses is
        logged and skipped: a read-only key opens the store as before, and filters on it read
        each candidate's payload instead.
        """
        wanted: list[tuple[str, Any]] = []
        if spec.tenant_key:
            wanted.append(
                (
                    spec.tenant_key,
                    models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
                )
            )
        wanted += [(key, models.PayloadSchemaType.KEYWORD) for key in spec.keywords]
        wanted += [(key, models.PayloadSchemaType.FLOAT) for key in spec.floats]
        wanted += [(key, models.PayloadSchemaType.INTEGER) for key in spec.integers]
        for key, schema in wanted:
            if key in have:
                continue
            try:
                self._client.create_payload_index(name, key, schema)
            except UnexpectedResponse as exc:
                if not repair:
                    raise
                _log.warning(
                    "could not index %r of collection %r (%s); filters on it read payloads instead",
                    key,
                    name,
                    exc.status_code,
                )

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace points in one request, waiting for it to be applied."""
        if not points:
            return
        refuse_bad_vectors(points)
        structs = [
            models.PointStruct(
                id=p.id,
                vector={**p.dense, **{k: _vector(v) for k, v in p.sparse.items()}},
                payload=dict(p.payload),
            )
            for p in points
        ]
        self._call(
            "upsert", lambda: self._client.upsert(self._name(collection), structs, wait=True)
        )

    def delete(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt`."""
        selector = models.FilterSelector(filter=render_filter(flt))
        self._call(
            "delete", lambda: self._client.delete(self._name(collection), selector, wait=True)
        )

    def query(self, collection: str, requests: Sequence[Search | Fused]) -> list[list[Hit]]:
        """Run the requests as one batch."""
        refuse_bad_vectors(requests)

        def run(asked: list[Search | Fused]) -> list[list[Hit]]:
            rendered = [render_request(r) for r in asked]
            answers = self._call(
                "query", lambda: self._client.query_batch_points(self._name(collection), rendered)
            )
            return [[_hit(p) for p in a.points] for a in answers]

        return answer_batch(requests, run, lambda hit: hit)

    def query_explained(
        self, collection: str, requests: Sequence[Fused]
    ) -> list[list[tuple[Hit, StreamRanks]]]:
        """Fused searches with each hit's stream ranks, in one batch."""
        refuse_bad_vectors(requests)

        def run(asked: list[Fused]) -> list[list[tuple[Hit, StreamRanks]]]:
            rendered = [render_request(r) for r in [*asked, *stream_searches(asked)]]
            answers = self._call(
                "query", lambda: self._client.query_batch_points(self._name(collection), rendered)
            )
            return explain_fused(asked, [a.points for a in answers], lambda p: p.id, _hit)

        return answer_batch(requests, run, lambda explained: explained[0])

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
        page = _page_offset(offset)
        if order_by is not None:
            order = models.OrderBy(
                key=order_by,
                direction=models.Direction.DESC if descending else models.Direction.ASC,
            )

            def fetch(fields: bool | Sequence[str]) -> list[Hit]:
                return self._scroll(collection, flt, limit, fields, None, order)[0]

            page = ordered_page(
                self,
                collection,
                flt,
                fetch,
                key=order_by,
                limit=cap_count(limit),
                descending=descending,
                with_payload=with_payload,
            )
            return page, None
        return self._scroll(collection, flt, limit, with_payload, page, None)

    def _scroll(
        self,
        collection: str,
        flt: Filter,
        limit: int,
        with_payload: bool | Sequence[str],
        offset: str | None,
        order: models.OrderBy | None,
    ) -> tuple[list[Hit], str | None]:
        if limit <= 0:
            return [], None  # qdrant-client refuses 0; the embedded engine answers nothing
        records, next_offset = self._call(
            "scroll",
            lambda: self._client.scroll(
                self._name(collection),
                scroll_filter=render_filter(flt),
                limit=cap_count(limit),
                offset=offset if order is None else None,
                with_payload=_with_payload(with_payload),
                with_vectors=False,
                order_by=order,
            ),
        )
        hits = [_hit(r) for r in records]
        return hits, (None if order is not None or next_offset is None else str(next_offset))

    def point_vectors(
        self, collection: str, ids: Sequence[str]
    ) -> dict[str, tuple[dict[str, list[float]], dict[str, SparseVec]]]:
        """The dense and sparse vectors stored at `ids`, by point id and vector name.

        For writing a point back as it was (taking back a failed write): a vector its payload
        does not keep could otherwise only be made anew, and differ from the stored one.
        """
        found: dict[str, tuple[dict[str, list[float]], dict[str, SparseVec]]] = {}
        wanted = list(dict.fromkeys(ids))
        for start in range(0, len(wanted), 1024):
            chunk = wanted[start : start + 1024]
            records = self._call(
                "retrieve",
                lambda chunk=chunk: self._client.retrieve(
                    self._name(collection), ids=chunk, with_payload=False, with_vectors=True
                ),
            )
            for record in records:
                vectors = record.vector if isinstance(record.vector, dict) else {}
                # A dense vector is a list of numbers, a sparse one an object, a multivector a
                # list of lists (left out).
                dense: dict[str, list[float]] = {
                    name: [float(x) for x in v if isinstance(x, int | float)]
                    for name, v in vectors.items()
                    if isinstance(v, list) and all(isinstance(x, int | float) for x in v)
                }
                sparse: dict[str, SparseVec] = {
                    name: SparseVec([int(i) for i in v.indices], [float(x) for x in v.values])
                    for name, v in vectors.items()
                    if isinstance(v, models.SparseVector)
                }
                found[str(record.id)] = (dense, sparse)
        return found

    def count(self, collection: str, flt: Filter) -> int:
        """Count matching points exactly."""
        result = self._call(
            "count",
            lambda: self._client.count(
                self._name(collection), count_filter=render_filter(flt), exact=True
            ),
        )
        return int(result.count)

    def _alias_target(self, collection: str) -> str | None:
        name = self._name(collection)
        for alias in self._client.get_aliases().aliases:
            if alias.alias_name == name:
                return alias.collection_name
        return None

    def has_collection(self, collection: str) -> bool:
        """Whether `collection` is on the server, looked up creating nothing.

        It is there as a collection, as an alias (a re-index switched it), or as the copy a
        switch cut in half left marked `serves` (opening it finishes that switch).
        """

        def run() -> bool:
            name = self._name(collection)
            if self._client.collection_exists(name) or self._alias_target(collection):
                return True
            staged = f"{name}{STAGING_MARK}"
            return any(
                (self._client.get_collection(described.name).config.metadata or {}).get("serves")
                == collection
                for described in self._client.get_collections().collections
                if described.name.startswith(staged)
            )

        return self._call("look up the collection", run)

    def _finish_switch(self, collection: str) -> Mapping[str, Any] | None:
        # A switch deletes the old collection, then points the alias at the new one; a crash in
        # between leaves the new one marked `serves`: finish the switch instead of starting empty.
        staged = f"{self._name(collection)}{STAGING_MARK}"
        for described in self._client.get_collections().collections:
            if not described.name.startswith(staged):
                continue
            metadata = dict(self._client.get_collection(described.name).config.metadata or {})
            if metadata.get("serves") == collection:
                self._client.update_collection_aliases(
                    [_create_alias(self._name(collection), described.name)]
                )
                return metadata
        return None

    def generation(self, collection: str) -> str:
        """The collection that serves `collection` now (changes when a re-index switches)."""
        target = self._call("get aliases", lambda: self._served_by(collection))
        return collection if target is None else target.removeprefix(self._prefix)

    def _served_by(self, collection: str) -> str | None:
        """The collection the alias `collection` names (None: none, it is a collection itself).

        A switch cut in half (the old collection deleted, no alias yet) is finished first, as
        opening the store does, so that a re-index run again goes on.
        """
        target = self._alias_target(collection)
        if target is None and not self._client.collection_exists(self._name(collection)):
            self._finish_switch(collection)
            target = self._alias_target(collection)
        return target

    def mark_reindexing(self, collection: str, staging: str | None) -> None:
        """Record on the collection serving `collection` that a re-index copies it to `staging`.

        Set before the re-index's last catch-up (None takes the mark off a re-index that did
        not switch). Writers of other processes read it after each write (`reindexing`): a
        write made before it is set is copied by that catch-up; one that finds it is taken
        back, since it may have landed after the catch-up read the collection.
        """

        def run() -> None:
            serving = self._alias_target(collection) or self._name(collection)
            metadata = dict(self._client.get_collection(serving).config.metadata or {})
            marked = None if staging is None else self._name(staging)
            self._client.update_collection(serving, metadata={**metadata, REINDEXING: marked})

        self._call("mark the re-index", run)

    def reindexing(self, collection: str, generation: str) -> str | None:
        """Why a write to `collection` made for its `generation` may not last, or None.

        One request, read after a write: `generation` (the collection that served
        `collection` when the writer checked) is marked by a re-index that copies it
        (`mark_reindexing`), or no longer serves `collection` (switched away and dropped, or,
        for a collection never re-indexed before, its name now serving the copy).
        """
        switched = "a re-index has switched it to new vectors"

        def run() -> str | None:
            name = self._name(generation)
            try:
                metadata = self._client.get_collection(name).config.metadata or {}
            except UnexpectedResponse as exc:
                if exc.status_code == 404:
                    return switched
                raise
            except ValueError:  # local mode's "not found"
                if self._client.collection_exists(name):
                    raise
                return switched
            staging = metadata.get(REINDEXING)
            if isinstance(staging, str):
                return f"a re-index is copying it to {staging.removeprefix(self._prefix)!r}"
            # The name of a collection never re-indexed now names the copy of the first one.
            if generation == collection and metadata.get("serves") == collection:
                return switched
            return None

        return self._call("check for a re-index", run)

    def drop_collection(self, collection: str) -> None:
        """Delete a collection that no alias serves (an abandoned staging one)."""
        self._call(
            "drop collection", lambda: self._client.delete_collection(self._name(collection))
        )

    def delete_staged(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt` from the staging collections a re-index left.

        A re-index killed or failed midway leaves a full copy of the collection in its staging
        collection until a later one finishes: a forget must reach it too. Never the
        collection that serves `collection`, nor one holding another kind of records.
        """
        staged = f"{self._name(collection)}{STAGING_MARK}"

        def copies() -> list[str]:
            serving = self._alias_target(collection) or self._name(collection)
            kind = (self._client.get_collection(serving).config.metadata or {}).get("kind")
            found: list[str] = []
            for described in self._client.get_collections().collections:
                name = described.name
                short = name.removeprefix(self._prefix)
                if name == serving or not name.startswith(staged):
                    continue
                metadata = self._client.get_collection(name).config.metadata or {}
                if is_staging_copy(short, collection, metadata, kind):
                    found.append(short)
            return found

        for name in self._call("list staging collections", copies):
            delete_checked(self, name, flt)

    def switch_collection(self, collection: str, staging: str) -> None:
        """Serve `collection` from `staging` through an alias; drop the old collection.

        Also drops the staging collections that re-indexes of `collection` killed or failed
        midway left (as the embedded engine deletes their folders at a switch).

        Returns once `staging` serves `collection`. A server can apply a request of the switch
        and still fail the call (an answer that timed out, a proxy's error after the write):
        after a failure the server is asked what it serves. Switched, this returns (what is
        left over is logged, and the next switch drops it); cut in half (the old collection
        deleted, no alias yet), the switch is finished; not switched, the error says that the
        old collection still serves every episode.
        """
        name, new = self._name(collection), self._name(staging)
        before = self._call("get aliases", lambda: self._alias_target(collection))

        def run() -> None:
            old = self._alias_target(collection)
            if old is not None:
                # Already an alias: moving it is one atomic request.
                if old != new:
                    self._client.update_collection_aliases(
                        [
                            models.DeleteAliasOperation(
                                delete_alias=models.DeleteAlias(alias_name=name)
                            ),
                            _create_alias(name, new),
                        ]
                    )
            else:
                # Each step again only if not done: a retry may follow one the server applied.
                if self._client.collection_exists(name):
                    metadata = dict(self._client.get_collection(new).config.metadata or {})
                    self._client.update_collection(new, metadata={**metadata, "serves": collection})
                    self._client.delete_collection(name)
                self._client.update_collection_aliases([_create_alias(name, new)])

        try:
            self._call("switch collection", run)
        except StoreClosedError:
            raise
        except EngineError as exc:
            self._settle_switch(collection, staging, exc)
        self._drop_after_switch(collection, new, before)

    def _settle_switch(self, collection: str, staging: str, exc: EngineError) -> None:
        """After a failed switch: return if `staging` serves `collection` now, else raise."""
        name, new = self._name(collection), self._name(staging)

        def served() -> bool:
            return self._served_by(collection) == new

        kind = EngineUnavailableError if isinstance(exc, EngineUnavailableError) else EngineError
        try:
            switched = self._call("check the switch", served)
        except EngineError as again:
            raise kind(
                f"{exc}; the re-index could not switch {collection!r} to its new copy "
                f"{staging!r}, and what the server serves now could not be read ({again}): "
                "every episode is in the old collection or in the new copy, none is lost. Open "
                "the store again (which finishes a switch cut in half) and run the re-index "
                "again to finish it"
            ) from exc
        if switched:
            _log.warning(
                "the switch of %r to %r reported a failure after it took effect (%s); "
                "the new collection serves it",
                name,
                new,
                self._hide(exc),
            )
            return
        raise kind(
            f"{exc}; the re-index did not switch: {collection!r} still serves every episode it "
            f"held, with the old embedder, and the new copy {staging!r} is kept. Run the "
            "re-index again to finish it (it embeds only what is missing)"
        ) from exc

    def _drop_after_switch(self, collection: str, new: str, before: str | None) -> None:
        """Drop the collection that served `collection` before the switch, and abandoned copies.

        The switch is done: a failure here is logged, and the next switch drops what is left.
        """

        def run() -> None:
            if before is not None and before != new:
                self._client.delete_collection(before)
            self._drop_abandoned(collection, new)

        try:
            self._call("drop old collections", run)
        except Exception as exc:  # the switch is done; the next one drops them
            name = self._name(collection)
            _log.warning("could not drop the old collections of %r (%s)", name, exc)

    def _drop_abandoned(self, collection: str, serving: str) -> None:
        """Delete the staging collections of `collection` a killed or failed re-index left.

        Each was a whole copy of the collection that nothing read or deleted any more (a
        re-index with another embedder fills another one). Only one of the exact staging form
        the re-index marked as its copy (`is_staging_copy`), holding the records of the kind
        `serving` holds, and served by no alias: never another collection named like one.
        """
        kind = (self._client.get_collection(serving).config.metadata or {}).get("kind")
        served = {a.collection_name for a in self._client.get_aliases().aliases}
        staged = f"{self._name(collection)}{STAGING_MARK}"
        for described in self._client.get_collections().collections:
            found = described.name
            if found == serving or found in served or not found.startswith(staged):
                continue
            metadata = self._client.get_collection(found).config.metadata or {}
            if is_staging_copy(found.removeprefix(self._prefix), collection, metadata, kind):
                self._client.delete_collection(found)

    def optimize(self) -> None:
        """Nothing to do (the server optimizes in the background), but a closed engine refuses."""
        with self._lock:
            if self._closed:
                raise StoreClosedError("the store is closed; open it again")

    def close(self) -> None:
        """Close the client (after a call under way in local mode); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._client.close()
