"""`ItemStore`: namespaced JSON items in one collection, found by key, filter or hybrid query.

Each item is one point whose id is derived from its tenant, namespace and key, so writing an
item again replaces it in place. An indexed item carries a dense vector and a BM25 vector of
its text; a query runs both searches and fuses them by weighted Reciprocal Rank Fusion in the
engine, under the same tenant, namespace and value filters as every other read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from episodex._common.errors import EngineError, ValidationError
from episodex._common.unreadable import read_readable, readable_time, report_unreadable
from episodex._common.validation import require_encodable, require_int, require_weight
from episodex._embedders.base import Embedder, embed_documents, embed_query, require_embedder
from episodex._engines.base import Engine
from episodex._engines.collection import (
    TOMBSTONE,
    clear_tombstones,
    collection_bm25,
    delete_counted,
    might_apply_failed_writes,
    open_collection,
    stored_points,
    tenant_filter,
    tombstone,
)
from episodex._engines.locks import write_lock
from episodex._engines.plan import CollectionSpec, Filter, Fused, HasId, Hit, Point, Stream
from episodex._engines.sparse import Bm25Encoder, require_bm25
from episodex._items.filters import namespace_matches, prefix_filter, value_filter
from episodex._items.model import (
    MAX_NAMESPACE_DEPTH,
    ItemPut,
    ItemRef,
    StoredItem,
    check_namespace,
    check_put,
    check_ref,
    item_payload,
    item_problem,
    point_id,
    same_ref,
    stored_item,
)

__all__ = ["COLLECTION", "ItemStore"]

_log = logging.getLogger("episodex")

COLLECTION = "items"
_PAGE = 512


class ItemStore:
    """Namespaced JSON items of many users in one collection (synchronous, thread-safe).

    Every method takes the tenant (`user_id`, `agent_id`) and starts its filter from it: no
    read, listing or delete reaches another tenant's items. Writes are validated whole before
    anything is written, and each batch of puts and deletes is one engine write.

    ```python
    from episodex import EpisodicMemory, ItemPut, ItemRef, ItemStore

    memory = EpisodicMemory(path="./memory")
    items = ItemStore(memory.engine, memory.embedder)  # an `items` collection beside episodes
    ref = ItemRef("alice", "chef", ("alice", "food"), "diet")
    items.write([ItemPut(ref, {"diet": "vegetarian"}, text="vegetarian diet")])
    print(items.get_many([ref])[0].value)  # -> {'diet': 'vegetarian'}
    hits = items.search(user_id="alice", agent_id="chef", namespace_prefix=("alice",),
                        query="what does alice eat?")
    print(hits[0].key)  # -> diet
    memory.close()
    ```

    Args:
        engine: The vector engine (an `EpisodicMemory`'s `engine` shares its store).
        embedder: The dense embedder (an `Embedder` object, not a model name); its id and
            dimension are recorded in the collection.
        bm25: The sparse encoder; None for the settings the collection was made with (the
            defaults for a new one). Other settings raise `EmbedderMismatchError`.
        collection: Collection name.
    """

    max_namespace_depth: ClassVar[int] = MAX_NAMESPACE_DEPTH
    """Most labels a namespace holds; a longer one is refused with `ValidationError`."""

    def __init__(
        self,
        engine: Engine,
        embedder: Embedder,
        *,
        bm25: Bm25Encoder | None = None,
        collection: str = COLLECTION,
    ) -> None:
        embedder = require_embedder(embedder)
        bm25 = require_bm25(bm25)
        self.engine = engine
        self.embedder = embedder
        self.bm25 = bm25 or Bm25Encoder()  # until the collection's own settings are read
        self.collection = collection
        spec = CollectionSpec(
            name=collection,
            dense={"text": embedder.dimension},
            sparse=("bm25",),
            tenant_key="user_id",
            keywords=("agent_id", "ns0", "ns1", "key"),
            floats=("updated_at",),
            integers=("ns_depth",),
        )
        where = f"the item collection {collection!r}"
        stored = open_collection(
            engine,
            spec,
            embedder_id=embedder.model_id,
            kind="namespaced_items",
            schema=1,
            where=where,
            mismatch_advice=(
                "open the store with the embedder it was made with; `episodex reindex` "
                "re-embeds conversation episodes only, and an item collection keeps its model: "
                "to move its items to another, read them with that embedder and write them to a "
                "new collection (`collection=`)"
            ),
            bm25=self.bm25.config,
        )
        self.bm25 = collection_bm25(stored, bm25, where)
        # Reading the stored creation times and writing must not interleave with another put.
        # Shared with every other store on this storage and collection in this process.
        self._write_lock = write_lock(engine, collection)

    # -- writing -------------------------------------------------------------------------

    def write(self, puts: Iterable[ItemPut] = (), deletes: Iterable[ItemRef] = ()) -> None:
        """Store `puts` (replacing items with the same reference) and delete `deletes`.

        Everything is validated before anything is written; a bad entry raises
        `ValidationError` naming its position. The whole batch, puts and deletes, is one
        engine write: it is applied whole, or not at all and an `EngineError` is raised. An
        item both put and deleted here is deleted. Deleting a missing item is not an error.
        A Qdrant server that fails to answer for a write is read back: a write it applied
        whole returns; one it applied in part (or that cannot be read back) raises an
        `EngineError` naming the items that may hold it: writing the batch again applies it.
        """
        checked_puts = [check_put(p, f"put {i}: ") for i, p in enumerate(_listed(puts, "puts"))]
        checked_deletes = [
            check_ref(r, f"delete {i}: ") for i, r in enumerate(_listed(deletes, "deletes"))
        ]
        deleted = set(checked_deletes)
        # The last put of a reference wins, as if the puts ran one by one.
        latest = {p.ref: p for p in checked_puts if p.ref not in deleted}
        points = self._points(list(latest.values())) if latest else []
        # A delete is written as a tombstone over the item's point, in the same upsert as the
        # puts: an upsert is all or nothing, while a put followed by a delete could stop
        # between the two and leave a batch half applied. A tombstone holds no tenant, vector
        # or namespace, so no read reaches it; it is removed right after.
        tombstones = [point_id(ref) for ref in dict.fromkeys(checked_deletes)]
        refs = {point_id(ref): ref for ref in (*latest, *checked_deletes)}
        with self._write_lock:
            now = time.time()
            if points:
                created = self._created_at([p.id for p in points])
                points = [
                    Point(
                        id=p.id,
                        dense=p.dense,
                        sparse=p.sparse,
                        payload={
                            **p.payload,
                            "created_at": created.get(p.id, now),
                            "updated_at": now,
                        },
                    )
                    for p in points
                ]
            points += [tombstone(i) for i in tombstones]
            if points:
                try:
                    self.engine.upsert(self.collection, points)
                except BaseException as exc:
                    if not might_apply_failed_writes(self.engine):
                        raise
                    self._settle_failed(points, refs, now, exc)
            if tombstones:
                clear_tombstones(self.engine, self.collection, tombstones)

    def _settle_failed(
        self, points: Sequence[Point], refs: Mapping[str, ItemRef], now: float, exc: BaseException
    ) -> None:
        """Return if a failed write is stored whole; raise what tells the caller what is stored.

        A server can apply a write and then fail to answer for it. An item it replaced cannot
        be written back (its vectors cannot be read back, its text is not stored), so the write
        is read back instead: applied whole, it is stored and the call returns; not applied at
        all, the error is raised with nothing changed; applied in part, or unreadable, the
        error names the items that may hold it, and writing the batch again applies it whole.
        """
        ids = [p.id for p in points]
        try:
            found = stored_points(self.engine, self.collection, ids)
        except Exception as check:
            raise EngineError(
                f"writing items failed ({exc}), and reading them back failed too ({check}): "
                "a server can apply a write and still fail to answer, so these items may hold "
                f"this write (put or deleted): {_named(refs, ids)}; write the batch again to "
                "apply it whole"
            ) from exc

        def holds_write(point: Point) -> bool:
            hit = found.get(point.id)
            if point.payload.get(TOMBSTONE) is True:
                return hit is None or hit.payload.get(TOMBSTONE) is True
            return hit is not None and hit.payload.get("updated_at") == now

        applied = [p.id for p in points if holds_write(p)]
        if len(applied) == len(points):
            _log.warning(
                "writing items: the server failed to answer (%s) but applied the write whole",
                exc,
            )
            return
        if not applied:
            raise exc
        raise EngineError(
            f"writing items failed ({exc}), and the server applied it to some items only: "
            f"{_named(refs, applied)} hold this write, {_named(refs, ids, but=applied)} do "
            "not; write the batch again to apply it whole"
        ) from exc

    def _points(self, puts: Sequence[ItemPut]) -> list[Point]:
        texts = [p.text for p in puts if p.text is not None]
        vectors = iter(embed_documents(self.embedder, texts))
        points: list[Point] = []
        for put in puts:
            dense: dict[str, list[float]] = {}
            sparse: dict[str, Any] = {}
            if put.text is not None:
                dense["text"] = next(vectors).tolist()
                bm25 = self.bm25.document(put.text)
                if bm25.indices:
                    sparse["bm25"] = bm25
            points.append(
                Point(
                    id=point_id(put.ref),
                    dense=dense,
                    sparse=sparse,
                    payload=item_payload(put, created_at=0.0, updated_at=0.0),
                )
            )
        return points

    def _created_at(self, ids: Sequence[str]) -> dict[str, float]:
        created: dict[str, float] = {}
        for start in range(0, len(ids), _PAGE):
            chunk = tuple(ids[start : start + _PAGE])
            hits, _ = self.engine.scroll(
                self.collection,
                Filter(must=(HasId(chunk),)),
                limit=len(chunk),
                with_payload=("created_at",),
            )
            # A tombstone left at an id has no creation time: the item is new again. So is
            # one whose creation time cannot be read back (another program, an older release):
            # writing it again is how it is corrected.
            created.update(
                (h.id, float(h.payload["created_at"]))
                for h in hits
                if readable_time(h.payload.get("created_at")) is not None
            )
        return created

    # -- reading -------------------------------------------------------------------------

    def get_many(self, refs: Iterable[ItemRef]) -> list[StoredItem | None]:
        """The items at `refs`, in order; None where there is none.

        An item stored but unreadable (written by another program or an older release: a
        field missing or of the wrong type) raises `EngineError` naming its point: asked for
        by reference, leaving it out would say it is not there, and it is. A put replaces it.
        """
        checked = [check_ref(r, f"ref {i}: ") for i, r in enumerate(_listed(refs, "refs"))]
        ids = [point_id(r) for r in checked]
        found: dict[str, dict[str, Any]] = {}
        unique = tuple(dict.fromkeys(ids))
        for start in range(0, len(unique), _PAGE):
            chunk = unique[start : start + _PAGE]
            hits, _ = self.engine.scroll(
                self.collection, Filter(must=(HasId(chunk),)), limit=len(chunk)
            )
            found.update((h.id, h.payload) for h in hits)
        out: list[StoredItem | None] = []
        for ref, pid in zip(checked, ids, strict=True):
            payload = found.get(pid)
            # The tenant is checked on the payload too, not only through the id.
            if (
                not payload
                or payload.get("user_id") != ref.user_id
                or payload.get("agent_id") != ref.agent_id
            ):
                out.append(None)
                continue
            problem = item_problem(payload)
            if problem is not None:
                raise EngineError(
                    f"item {pid} ({ref.namespace!r}, {ref.key!r}) is stored but cannot be read "
                    f"back: {problem} (written by another program or an older release); a put "
                    "of that item replaces it, a delete removes it"
                )
            out.append(stored_item(payload) if same_ref(payload, ref) else None)
        return out

    def search(
        self,
        *,
        user_id: str,
        agent_id: str,
        namespace_prefix: Sequence[str] = (),
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        dense_weight: float = 0.3,
        bm25_weight: float = 0.7,
        rrf_k: int = 10,
        stage1_limit: int = 100,
    ) -> list[StoredItem]:
        """Items under `namespace_prefix` that pass `filter`, best first for a query.

        Without a query (or a blank one) items come newest first (by last write). With one,
        the dense and BM25 searches over indexed items each take their `stage1_limit` best
        and the engine fuses them by weighted RRF (then the next `stage1_limit` of the rest,
        and so on, for hits past the first ones); items stored without text are not ranked.
        An item that cannot be read back (written by another program or an older release) is
        left out, logged once with its point id, and the next ones fill its place.

        Args:
            user_id: The user whose items are searched.
            agent_id: The agent.
            namespace_prefix: Labels the namespace starts with (`*` matches any label).
            query: Natural-language query.
            filter: A value filter run in the engine: `{"status": "active"}` matches an equal
                field, a nested dict a nested field, and `{"n": {"$gt": 4}}` compares with
                `$eq`, `$ne`, `$gt`, `$gte`, `$lt` or `$lte` (numbers compare as numbers; a
                list field is compared whole, never by its elements).
            limit: Most items returned.
            offset: Items skipped first (for pages).
            dense_weight: RRF weight of the dense search.
            bm25_weight: RRF weight of the BM25 search.
            rrf_k: The RRF constant.
            stage1_limit: Candidates each search takes before fusion. Past this many hits the
                ranking goes on with the items left, fused again at this depth, so every page
                is a slice of one ranking.
        """
        base = tenant_filter(user_id, agent_id)
        prefix = check_namespace(namespace_prefix, "namespace_prefix: ", allow_empty=True)
        limit = require_int("limit", limit)
        offset = require_int("offset", offset)
        flt = value_filter(prefix_filter(base, prefix), filter)
        if query is not None and not isinstance(query, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"query must be a string or None, got {query!r}")
        if query is not None:
            require_encodable("query", query)
        weights = {
            "text": require_weight("dense_weight", dense_weight),
            "bm25": require_weight("bm25_weight", bm25_weight),
        }
        k = require_int("rrf_k", rrf_k, minimum=1)
        stage1 = require_int("stage1_limit", stage1_limit, minimum=1)
        if limit == 0:
            return []
        wanted = offset + limit
        if query is None or not query.strip():
            return _readable(
                offset,
                wanted,
                lambda n: self.engine.scroll(
                    self.collection, flt, limit=n, order_by="updated_at", descending=True
                )[0],
                scored=False,
            )
        if not any(weights.values()):
            raise ValidationError("dense_weight and bm25_weight are both 0: give one a weight > 0")
        vectors: list[tuple[str, Any]] = []
        if weights["text"] > 0:
            vectors.append(("text", embed_query(self.embedder, query).tolist()))
        if weights["bm25"] > 0:
            sparse = self.bm25.query(query)
            if sparse.indices:
                vectors.append(("bm25", sparse))
        if not vectors:
            return []  # only stopwords, and only BM25 weighted

        def fused(n: int) -> list[Hit]:
            # Pages must be slices of one ranking: fused from lists as deep as the page, each
            # page was ranked anew past the `stage1`-th hit, and paging showed some items
            # twice and others never. So the ranking is cut into stretches of `stage1`, each
            # fused at that depth among the items the stretches before it left: the same
            # whatever the page's limit and offset.
            hits: list[Hit] = []
            while len(hits) < n:
                asked = min(stage1, n - len(hits))
                request = Fused(
                    streams=tuple(Stream(using, vector, stage1) for using, vector in vectors),
                    weights=tuple(weights[using] for using, _ in vectors),
                    k=k,
                    filter=flt.and_not(HasId(tuple(h.id for h in hits))) if hits else flt,
                    limit=asked,
                )
                stretch = self.engine.query(self.collection, [request])[0]
                hits += _below(hits[-1].score if hits else None, stretch)
                if len(stretch) < asked:
                    break
            return hits

        return _readable(offset, wanted, fused, scored=True)

    def list_namespaces(
        self,
        *,
        user_id: str,
        agent_id: str,
        prefix: Sequence[str] = (),
        suffix: Sequence[str] = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The distinct namespaces holding items, sorted, cut to `max_depth` labels.

        Args:
            user_id: The user whose namespaces are listed.
            agent_id: The agent.
            prefix: Labels the namespace starts with (`*` matches any label).
            suffix: Labels it ends with (`*` matches any label).
            max_depth: Namespaces longer than this are cut to their first `max_depth` labels
                (and listed once).
            limit: Most namespaces returned.
            offset: Namespaces skipped first.
        """
        base = tenant_filter(user_id, agent_id)
        prefix = check_namespace(prefix, "prefix: ", allow_empty=True)
        suffix = check_namespace(suffix, "suffix: ", allow_empty=True)
        if max_depth is not None:
            max_depth = require_int("max_depth", max_depth, minimum=1)
        limit = require_int("limit", limit)
        offset = require_int("offset", offset)
        flt = prefix_filter(base, prefix)
        found: set[tuple[str, ...]] = set()
        page: str | None = None
        while True:
            hits, page = self.engine.scroll(
                self.collection, flt, limit=_PAGE, with_payload=("namespace",), offset=page
            )
            for hit in hits:
                problem = item_problem(hit.payload, ("namespace",))
                if problem is not None:
                    report_unreadable("item", hit.id, problem)
                    continue
                namespace = tuple(hit.payload["namespace"])
                if namespace_matches(namespace, prefix=prefix, suffix=suffix):
                    found.add(namespace[:max_depth] if max_depth is not None else namespace)
            if page is None:
                break
        return sorted(found)[offset : offset + limit]

    def count(self, *, user_id: str, agent_id: str, namespace_prefix: Sequence[str] = ()) -> int:
        """Number of items of this user and agent (under `namespace_prefix` if given)."""
        base = tenant_filter(user_id, agent_id)
        prefix = check_namespace(namespace_prefix, "namespace_prefix: ", allow_empty=True)
        return self.engine.count(self.collection, prefix_filter(base, prefix))

    def forget(self, *, user_id: str, agent_id: str, namespace_prefix: Sequence[str] = ()) -> int:
        """Delete every item of this user and agent under `namespace_prefix`; returns how many.

        The items stored when the call starts: one another writer puts meanwhile is kept, and
        the number is what was deleted (`delete_counted`).
        """
        base = tenant_filter(user_id, agent_id)
        prefix = check_namespace(namespace_prefix, "namespace_prefix: ", allow_empty=True)
        flt = prefix_filter(base, prefix)
        with self._write_lock:
            return delete_counted(self.engine, self.collection, flt)


def _readable(
    offset: int, wanted: int, read: Callable[[int], list[Hit]], *, scored: bool
) -> list[StoredItem]:
    """Items `offset` to `wanted` of those `read(limit)` finds that can be read back.

    An item that cannot be read back (written by another program or an older release) is
    left out and reported once, and the read filled (`read_readable`).
    """

    def keep(hit: Hit) -> StoredItem | None:
        problem = item_problem(hit.payload)
        if problem is None:
            return stored_item(hit.payload, hit.score if scored else None)
        report_unreadable("item", hit.id, problem)
        return None

    return read_readable(wanted, read, keep)[offset:]


def _below(bound: float | None, stretch: list[Hit]) -> list[Hit]:
    """`stretch` with its scores scaled to `bound` at most, so a ranking's scores descend.

    A later stretch is fused among what is left, so its first hit scores like a first hit.
    """
    top = max((hit.score for hit in stretch), default=0.0)
    if bound is None or top <= bound or top <= 0:
        return stretch
    return [Hit(hit.id, hit.score * bound / top, hit.payload) for hit in stretch]


def _named(refs: Mapping[str, ItemRef], ids: Sequence[str], but: Sequence[str] = ()) -> str:
    """The items at `ids` (less those at `but`), each as its namespace and key."""
    left = set(but)
    return ", ".join(
        f"({refs[i].namespace!r}, {refs[i].key!r})" for i in dict.fromkeys(ids) if i not in left
    )


def _listed(values: object, name: str) -> list[Any]:
    if isinstance(values, Mapping | str | bytes) or not isinstance(values, Iterable):
        raise ValidationError(f"{name} must be a list, got {type(values).__name__}")
    return list(values)  # pyright: ignore[reportUnknownArgumentType]
