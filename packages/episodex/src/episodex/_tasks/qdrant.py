"""The Qdrant task-episode store: dense + BM25 vectors fused in the engine, embedded or on a server."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Unpack

from episodex._common.errors import (
    ConfigurationError,
    EpisodeNotFoundError,
    StoreClosedError,
    ValidationError,
)
from episodex._common.host import EngineHost
from episodex._common.sync import in_thread
from episodex._common.unreadable import read_readable, report_unreadable
from episodex._common.validation import is_integer, require_int, require_weight
from episodex._embedders.base import Embedder, embed_documents, embed_query
from episodex._engines.base import Engine, check_collection_name
from episodex._engines.collection import (
    clear_tombstones,
    collection_bm25,
    delete_checked,
    foreign_claims,
    might_apply_failed_writes,
    open_collection,
    payload_path,
    stored_points,
    stored_vectors,
    tombstone,
    upsert_or_take_back,
)
from episodex._engines.factory import (
    EngineOptions,
    check_engine_options,
    open_engine,
    store_path,
)
from episodex._engines.locks import write_lock
from episodex._engines.plan import (
    CollectionSpec,
    Condition,
    Filter,
    Fused,
    HasId,
    Hit,
    Match,
    MatchAny,
    Point,
    Search,
    SparseVec,
    Stream,
)
from episodex._engines.sparse import Bm25Encoder
from episodex._tasks.model import Episode
from episodex._tasks.store import (
    SEARCH_OPTION_NAMES,
    BaseMemoryStore,
    MetadataFilter,
    TaskSearchOptions,
    Tenant,
    bm25_arg,
    describe_store,
    embedded_text_arg,
    episode_arg,
    episode_point_id,
    id_arg,
    known_options,
    metadata_filter,
    search_args,
    tenant_arg,
    tenant_key,
    threshold_arg,
)

__all__ = ["QdrantTaskStore"]

COLLECTION = "task_episodes"


class QdrantTaskStore(BaseMemoryStore):
    """Task episodes in a Qdrant collection (`task_episodes`): dense plus BM25, fused by RRF.

    Runs on the embedded Qdrant Edge engine (a folder), qdrant-client's `:memory:` mode or a
    Qdrant server, and can share the engine and embedder of an `EpisodicMemory`, so one
    folder holds conversation and task episodes. Each episode is one point whose id is derived
    from the episode id (and the tenant): every attempt at a task is kept, and writing the
    same episode id again replaces it. With `user_id` and/or `agent_id` every call is scoped to
    that tenant, so stores of several tenants share one collection without ever mixing.

    Open it with `path=` (its own embedded folder), `location=":memory:"`, `url=` (a server),
    `engine=`, or `memory=` to share an `EpisodicMemory`'s store:

    ```python
    from episodex import Episode, EpisodicMemory, QdrantTaskStore, Task, TaskResult

    memory = EpisodicMemory(path="./memory")
    store = QdrantTaskStore(memory=memory)  # the same folder, its own collection
    task = Task(instruction="Convert 3 miles to km")
    await store.write(Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km")))
    hits = await store.search("miles to kilometres", k=3, score_threshold=0.3)
    print(hits[0].result)  # -> 4.83 km
    memory.close()
    ```

    Args:
        path: Folder of an embedded Qdrant Edge store.
        engine: An engine opened elsewhere (not closed by this store).
        memory: An `EpisodicMemory` (or any `EngineHost`) whose engine and embedder to share.
        embedder: The dense embedder (default: the memory's, else the bundled model).
        collection: The collection name.
        bm25: The BM25 tokenizer and parameters; None for those the collection was made
            with (the defaults for a new one). Others raise `EmbedderMismatchError`.
        stage1_limit: How many candidates each stream hands to fusion.
        user_id: The end user whose episodes this store holds (None: not scoped).
        agent_id: The agent whose episodes this store holds (None: not scoped).
        **options: `EngineOptions`: `url` of a Qdrant server, `location=":memory:"` for
            qdrant-client's local mode, `api_key` and the other ways to reach a server.
    """

    SEARCH_OPTIONS = SEARCH_OPTION_NAMES

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        engine: Engine | None = None,
        memory: EngineHost[Engine, Embedder] | None = None,
        embedder: Embedder | str | None = None,
        collection: str = COLLECTION,
        bm25: Bm25Encoder | None = None,
        stage1_limit: int = 100,
        user_id: str | None = None,
        agent_id: str | None = None,
        **options: Unpack[EngineOptions],
    ) -> None:
        from episodex._embedders.resolve import resolve_embedder

        check_engine_options(options, "QdrantTaskStore")
        folder = store_path(path)
        try:
            self.tenant: Tenant = tenant_arg(user_id, agent_id)
        except ValidationError as exc:
            raise ConfigurationError(str(exc)) from None
        self.user_id, self.agent_id = self.tenant
        self._scope = _tenant_scope(self.tenant)
        url, location = options.get("url"), options.get("location")

        sources = [
            name
            for name, value in (
                ("path", path),
                ("url", url),
                ("location", location),
                ("engine", engine),
                ("memory", memory),
            )
            if value is not None
        ]
        if len(sources) != 1:
            raise ConfigurationError(
                "give exactly one of path=, url=, location=':memory:', engine= or memory=; "
                f"got {sources or 'none'}"
            )
        if memory is not None:
            engine = memory.engine
            embedder = memory.embedder if embedder is None else embedder
        # Before the engine opens: a refused name leaves no new store folder behind.
        check_collection_name(
            collection, embedded=path is not None or getattr(engine, "kind", None) == "edge"
        )
        # Every argument is checked before an engine is opened: a store that fails to open
        # must leave its folder free for others.
        self.bm25 = bm25_arg(bm25)
        self.stage1_limit = require_int("stage1_limit", stage1_limit, error=ConfigurationError) or 1
        self.embedder: Embedder = resolve_embedder(embedder)
        self._owns_engine = engine is None
        self._closed = False
        if engine is None:
            engine = open_engine(path=folder, **options)
        self.engine: Engine = engine
        self.collection = collection
        where = f"the task episode collection {collection!r}"
        try:
            stored = open_collection(
                engine,
                CollectionSpec(
                    name=collection,
                    dense={"dense": self.embedder.dimension},
                    sparse=("bm25",),
                    keywords=("episode_id", "task_id", "tenant", "tenanted"),
                    floats=("completed_at",),
                ),
                embedder_id=self.embedder.model_id,
                kind="task_episodes",
                schema=1,
                where=where,
                mismatch_advice=(
                    "open the store with the embedder it was made with (`embedder=`); "
                    "`episodex reindex` re-embeds conversation episodes only, and a task "
                    "collection keeps its model: to move its episodes to another, read them "
                    "with that embedder and write them to a new collection (`collection=`)"
                ),
                bm25=self.bm25.config,
            )
            self.bm25 = collection_bm25(stored, bm25, where)
        except BaseException:
            if self._owns_engine:
                engine.close()
            raise
        # Shared with every other store on this storage and collection in this process.
        self._write_lock = write_lock(engine, collection)

    # -- synchronous core ----------------------------------------------------------------

    def _point(self, episode: Episode, text: str) -> Point:
        dense = embed_documents(self.embedder, [text])[0].tolist()
        payload: dict[str, Any] = {
            "episode": episode.to_record(),
            "episode_id": episode.id_,
            "task_id": episode.task.id_,
            "completed_at": episode.completed_at.timestamp(),
            "metadata": episode.metadata,
            "text": text,
        }
        if self.tenant != (None, None):
            payload.update(
                tenant=tenant_key(self.tenant),
                tenanted="yes",
                user_id=self.user_id,
                agent_id=self.agent_id,
            )
        return Point(
            id=episode_point_id(episode.id_, self.tenant),
            dense={"dense": dense},
            sparse={"bm25": self.bm25.document(text)},
            payload=payload,
        )

    def _store(self, point: Point, episode_id: str) -> None:
        # A point id is a digest of the tenant and the episode id, so a shared store's episode
        # id can be crafted to name a tenant's point (`'["u", "a"]\nE1'` is user u's `E1`):
        # writing it would replace that tenant's episode. The stored owner must be this store.
        owner = tenant_key(self.tenant) if self.tenant != (None, None) else None
        # On a server, what the write replaces is read whole (in the owner check's one read):
        # a write it applies and then fails to answer for is taken back.
        server = might_apply_failed_writes(self.engine)
        before = stored_points(self.engine, self.collection, [point.id]) if server else None
        stored = None if before is None else {i: h.payload for i, h in before.items()}
        if foreign_claims(
            self.engine,
            self.collection,
            [(point.id, (owner,))],
            ("tenant",),
            stored_payloads=stored,
        ):
            raise ValidationError(
                f"episode id {episode_id!r} names a stored episode of another user or agent; "
                "use another episode id"
            )
        # Any other point of this tenant holding the same episode id (one stored under the
        # first scheme, keyed by task id) is hidden by a tombstone in the same upsert: two
        # calls (write, then delete) could stop between them and leave both copies to every
        # read. `tenanted` keeps the tombstone out of an unscoped store's reads too.
        stale_filter = self._scope.and_(Match("episode_id", episode_id)).and_not(HasId((point.id,)))
        hits, _ = self.engine.scroll(self.collection, stale_filter, limit=64, with_payload=server)
        stale = [h.id for h in hits]
        if before is not None:
            before.update((h.id, h) for h in hits)  # hidden by the write's tombstones
        # A replaced point without a readable text (another program's, an older release's) is
        # written back by the vectors it is stored with, read now.
        kept = stored_vectors(
            self.engine,
            self.collection,
            [i for i, h in (before or {}).items() if _stored_text(h) is None],
        )
        upsert_or_take_back(
            self.engine,
            self.collection,
            [point, *(tombstone(i, tenanted="yes") for i in stale)],
            before,
            lambda old: self._restored(old, kept),
            "writing the task episode",
        )
        if stale:
            clear_tombstones(self.engine, self.collection, stale)

    def _restored(
        self,
        hits: Sequence[Hit],
        kept: Mapping[str, tuple[Mapping[str, list[float]], Mapping[str, SparseVec]]],
    ) -> list[Point]:
        """Stored episodes as they were, payload and all, each with vectors this store takes.

        Their vectors are made again from their stored text. A point without a readable text
        (written by another program or an older release) gets the vectors it was stored with
        (`kept`, read before the write), each one the engine could not read (or of another
        length) made from the text its episode gives, as a new write of it would index
        (`_restored_text`).
        """
        texts = [_restored_text(h) for h in hits]
        stored = [kept.get(h.id, ({}, {})) for h in hits]
        dense_kept = [self._fitting(d.get("dense")) for d, _ in stored]
        redo = [i for i, v in enumerate(dense_kept) if v is None]
        made = iter(embed_documents(self.embedder, [texts[i] for i in redo]))
        dense = [v if v is not None else next(made).tolist() for v in dense_kept]
        points: list[Point] = []
        for h, text, vector, (_, sparse) in zip(hits, texts, dense, stored, strict=True):
            bm25 = sparse.get("bm25")
            points.append(
                Point(
                    id=h.id,
                    dense={"dense": vector},
                    sparse={"bm25": bm25 if bm25 is not None else self.bm25.document(text)},
                    payload=dict(h.payload),
                )
            )
        return points

    def _fitting(self, vector: list[float] | None) -> list[float] | None:
        if vector is None or len(vector) != self.embedder.dimension:
            return None
        return vector if all(math.isfinite(x) for x in vector) else None

    def _write(self, episode: Episode, text: str | None) -> None:
        point = self._point(episode, embedded_text_arg(episode, text))
        with self._write_lock:
            self._store(point, episode.id_)

    def _find(self, episode_id: str) -> Hit | None:
        hits, _ = self.engine.scroll(
            self.collection, self._scope.and_(Match("episode_id", episode_id)), limit=1
        )
        return hits[0] if hits else None

    def _update(self, episode: Episode) -> None:
        with self._write_lock:
            old = self._find(episode.id_)
            if old is None:
                raise EpisodeNotFoundError(
                    f"no episode {episode.id_!r} in collection {self.collection!r}"
                )
            text = _custom_text(old, episode)
            self._store(self._point(episode, embedded_text_arg(episode, text)), episode.id_)

    def _delete(self, id_: str) -> None:
        flt = self._scope.and_(Match("episode_id", id_))
        with self._write_lock:
            if not self.engine.count(self.collection, flt):
                raise EpisodeNotFoundError(f"no episode {id_!r} in collection {self.collection!r}")
            delete_checked(self.engine, self.collection, flt)

    def _recent(
        self, n: int, *, descending: bool = True, flt: Filter | None = None
    ) -> list[Episode]:
        if n == 0:
            return []
        return _readable(
            n,
            lambda limit: self.engine.scroll(
                self.collection,
                self._scope if flt is None else flt,
                limit=limit,
                order_by="completed_at",
                descending=descending,
                with_payload=("episode",),
            )[0],
        )

    def _search(
        self,
        query: str,
        k: int,
        flt: Filter,
        threshold: float | None,
        mode: str,
        weights: Mapping[str, float],
        rrf_k: int,
    ) -> list[Episode]:
        if k == 0:
            return []
        stage1 = max(self.stage1_limit, k)
        dense = (
            Stream("dense", embed_query(self.embedder, query).tolist(), stage1)
            if mode != "bm25" and weights["dense"] > 0
            else None
        )
        sparse_vec = (
            self.bm25.query(query) if mode != "dense" and weights["bm25"] > 0 else SparseVec([], [])
        )
        sparse = Stream("bm25", sparse_vec, stage1) if sparse_vec.indices else None
        payload = ("episode",)
        if mode == "dense" or sparse is None:
            if dense is None:
                return []  # a BM25-only search for a query of only stopwords
            request: Search | Fused = Search(dense, flt, k, payload, threshold)
        elif mode == "bm25" or dense is None:
            request = Search(sparse, flt, k, payload, threshold)
        else:
            if threshold is not None:
                # RRF scores are ranks, not similarities: the threshold applies to the dense
                # stream, and fusion only ranks the episodes that pass it.
                passing = self.engine.query(
                    self.collection, [Search(dense, flt, stage1, False, threshold)]
                )[0]
                if not passing:
                    return []
                flt = flt.and_(HasId(tuple(h.id for h in passing)))
            request = Fused(
                (dense, sparse), (weights["dense"], weights["bm25"]), rrf_k, flt, k, payload
            )
        final = request
        return _readable(
            k,
            lambda limit: self.engine.query(
                self.collection, [dataclasses.replace(final, limit=limit)]
            )[0],
        )

    def _summary(self) -> str:
        count = self.engine.count(self.collection, self._scope)
        newest = self._recent(1)
        oldest = self._recent(1, descending=False)
        where = f"collection {self.collection!r} on {self.engine.kind}"
        return describe_store(
            f"QdrantTaskStore ({where})",
            count,
            newest[0] if newest else None,
            oldest[0] if oldest else None,
        )

    def _check_open(self) -> None:
        # Before any work: a call that needs no engine (`k=0`, `n=0`) refuses too, as the
        # engine refuses every other one.
        if self._closed:
            raise StoreClosedError(
                f"the task store (collection {self.collection!r}) is closed; open it again"
            )

    # -- the store protocol --------------------------------------------------------------

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Embed and store the episode; a stored episode with the same episode id is replaced.

        Args:
            episode: The episode.
            embedded_text: The text embedded and BM25-indexed instead of the instruction,
                result, additional data and error.
        """
        self._check_open()
        episode = episode_arg(episode)
        text = None if embedded_text is None else embedded_text_arg(episode, embedded_text)
        await in_thread(self._write, episode, text)

    async def read_recent(
        self, n: int, *, filter: MetadataFilter | Filter | None = None
    ) -> list[Episode]:
        """The `n` episodes completed last, newest first.

        Args:
            n: How many episodes at most.
            filter: Only episodes that pass it, as in `search` (the tenant scope always holds).
        """
        self._check_open()
        n = require_int("n", n)
        flt = self._scope if filter is None else self._search_options({"filter": filter})[0]
        return await asyncio.to_thread(self._recent, n, flt=flt)

    async def count(self) -> int:
        """How many episodes are stored."""
        self._check_open()
        return await asyncio.to_thread(self.engine.count, self.collection, self._scope)

    async def search(
        self, query: str, k: int = 3, **options: Unpack[TaskSearchOptions]
    ) -> list[Episode]:
        """Up to `k` episodes for `query`: dense and BM25 streams fused by weighted RRF.

        Args:
            query: The search text (usually the new task's instruction).
            k: How many episodes at most.
            **options: `TaskSearchOptions`: `filter`, `score_threshold`, `mode`,
                `dense_weight`, `bm25_weight`, `rrf_k`.
        """
        self._check_open()
        query, k = search_args(query, k, options, self.SEARCH_OPTIONS, "QdrantTaskStore")
        flt, threshold, mode, weights, rrf_k = self._search_options(options)
        return await asyncio.to_thread(
            functools.partial(self._search, query, k, flt, threshold, mode, weights, rrf_k)
        )

    def check_search_options(self, options: Mapping[str, Any]) -> None:
        """Raise `ValidationError` unless `search` takes these options (names and values).

        Strategies check their `search_kwargs` with it when they are made, not at each recall.
        """
        self._search_options(options)

    def _search_options(
        self, options: Mapping[str, Any]
    ) -> tuple[Filter, float | None, str, dict[str, float], int]:
        known_options(options, self.SEARCH_OPTIONS, "QdrantTaskStore")
        raw_filter = options.get("filter")
        flt = (
            raw_filter
            if isinstance(raw_filter, Filter)
            else _plan_filter(metadata_filter(raw_filter))
        )
        # The tenant scope is added to every filter, a caller's plan Filter included.
        flt = Filter(self._scope.must + flt.must, self._scope.must_not + flt.must_not)
        threshold = threshold_arg(options.get("score_threshold"))
        mode = options.get("mode", "hybrid")
        if mode not in ("hybrid", "dense", "bm25"):
            raise ValidationError(f"mode must be 'hybrid', 'dense' or 'bm25', got {mode!r}")
        weights = {
            "dense": require_weight("dense_weight", options.get("dense_weight", 1.0)),
            "bm25": require_weight("bm25_weight", options.get("bm25_weight", 1.0)),
        }
        if not any(weights.values()):
            raise ValidationError("dense_weight and bm25_weight are both 0: give one a weight > 0")
        rrf_k: object = options.get("rrf_k", 10)
        if not is_integer(rrf_k) or int(rrf_k) < 1:
            raise ValidationError(f"rrf_k must be an integer >= 1, got {rrf_k!r}")
        rrf_k = int(rrf_k)
        return flt, threshold, mode, weights, rrf_k

    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""
        self._check_open()
        return await asyncio.to_thread(self._summary)

    async def delete(self, id_: str) -> None:
        """Delete the episode with this id; `EpisodeNotFoundError` if there is none."""
        self._check_open()
        await in_thread(self._delete, id_arg(id_))

    async def update(self, episode: Episode) -> None:
        """Replace the stored episode with this one's id; `EpisodeNotFoundError` if none."""
        self._check_open()
        await in_thread(self._update, episode_arg(episode))

    def close(self) -> None:
        """Close the engine if this store opened it (after a write under way); idempotent.

        Every later call of such a store raises `StoreClosedError`. An engine given with
        `engine=` or `memory=` belongs to whoever opened it, and stays open.
        """
        if self._owns_engine:
            # A write whose caller gave up goes on in its thread: let it finish its steps.
            with self._write_lock:
                self._closed = True
                self.engine.close()

    async def aclose(self) -> None:
        """Close the engine if this store opened it, as `close` does.

        A write under way is waited for in a worker thread, so the event loop runs meanwhile.
        """
        await in_thread(self.close)

    async def __aenter__(self) -> QdrantTaskStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _readable(n: int, read: Callable[[int], list[Hit]]) -> list[Episode]:
    """The first `n` episodes `read(limit)` finds that can be read back.

    A stored episode that fails validation (written by another program or an older release)
    is left out and reported once, and the read filled (`read_readable`).
    """

    def keep(hit: Hit) -> Episode | None:
        try:
            return Episode.parse(hit.payload["episode"])
        except (ValidationError, KeyError) as exc:
            report_unreadable("task episode", hit.id, str(exc))
            return None

    return read_readable(n, read, keep)


def _stored_text(hit: Hit) -> str | None:
    """The stored text a point is indexed by, None where it has none readable."""
    text = hit.payload.get("text")
    return text if isinstance(text, str) and text.strip() else None


def _restored_text(hit: Hit) -> str:
    """The text a stored point written back is indexed by: never empty, so it is found.

    Its stored text when readable, else (written by another program or an older release) the
    text its episode gives, as a new write of it would index; a point whose record cannot be
    read either (left out by every read) by its payload as JSON.
    """
    text = _stored_text(hit)
    if text is not None:
        return text
    try:
        return embedded_text_arg(Episode.parse(hit.payload["episode"]), None)
    except (ValidationError, KeyError):
        return json.dumps(hit.payload, sort_keys=True, default=str)


def _custom_text(old: Hit, episode: Episode) -> str | None:
    """The indexed text an update of `old` to `episode` keeps: None for the episode's own.

    A custom text is kept only while the task's text could not have changed. A stored point
    that cannot be read back (written by another program or an older release: no record, no
    text, either of another shape) is replaced whole, as its warning advises: the update is
    how it is stored again corrected, so it must not fail on what it replaces.
    """
    try:
        stored = Episode.parse(old.payload["episode"])
        text = embedded_text_arg(stored, old.payload["text"])
    except (ValidationError, KeyError) as exc:
        report_unreadable("task episode", old.id, str(exc), done="the update replaces it")
        return None
    custom = text != embedded_text_arg(stored, None)
    same_task = old.payload["episode"]["task"] == episode.task.model_dump(mode="json")
    return text if custom and same_task else None


def _tenant_scope(tenant: Tenant) -> Filter:
    """The filter every call starts from: this tenant's points, or, unscoped, untenanted ones.

    Points of the first scheme carry no tenant fields, so an unscoped store excludes tenanted
    points rather than requiring an empty tenant.
    """
    if tenant == (None, None):
        return Filter(must_not=(Match("tenanted", "yes"),))
    return Filter(must=(Match("tenant", tenant_key(tenant)),))


def _plan_filter(flt: Mapping[str, str | int | tuple[str, ...]]) -> Filter:
    conditions: list[Condition] = []
    for key, wanted in flt.items():
        # Each part quoted as needed: `{"user id": ...}` is a key, not an invalid path.
        try:
            path = payload_path("metadata", *key.split("."))
        except ValueError as exc:
            raise ValidationError(
                f"filter key {key!r} cannot be matched in the engine: {exc}"
            ) from None
        conditions.append(
            MatchAny(path, wanted) if isinstance(wanted, tuple) else Match(path, wanted)
        )
    return Filter(must=tuple(conditions))
