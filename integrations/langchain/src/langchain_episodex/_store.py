"""`EpisodexStore`: episodex as LangGraph's long-term memory store (`BaseStore`)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral, Real
from typing import Any

from episodex import (
    ConfigurationError,
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    NotSupportedError,
    StoredItem,
    SyncEpisodicMemory,
    ValidationError,
)

from langchain_episodex._settings import check_ids

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        'EpisodexStore needs LangGraph: pip install "langchain-episodex[langgraph]"'
    ) from exc

__all__ = ["EpisodexStore"]

logger = logging.getLogger("langchain_episodex")

_WILDCARD = "*"


class EpisodexStore(BaseStore):
    """LangGraph's long-term memory store on episodex: items in the memory's own engine.

    Items live in an `items` collection beside the episodes, under the same tenant rules.
    The user is a label of the namespace (the first one unless `user_position` says
    otherwise), or fixed by `user_id=`; the agent is fixed by `agent_id=`. So
    `("alice", "memories")` is Alice's, and no get, search, listing or delete reaches
    another user's items. A search or listing must name the user in its prefix.

    `search(prefix, query=...)` is episodex's hybrid search: a dense and a BM25 search over
    each item's indexed text, fused by weighted Reciprocal Rank Fusion in the engine, with
    `filter` (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, nested fields) also run in the
    engine. Without a query, items come newest first. TTLs are not supported: a `ttl` is
    refused with `NotSupportedError` (a `NotImplementedError`, as LangGraph's own refusal) and
    `refresh_ttl` has nothing to refresh.

    Setup:
        `pip install "langchain-episodex[langgraph]"` (or the `agents` extra).

    Instantiate:
        ```python
        from episodex import EpisodicMemory
        from langchain_episodex import EpisodexStore

        memory = EpisodicMemory(path="./memory")
        store = EpisodexStore(memory, agent_id="chef", index={"fields": ["text"]})
        ```

    Use (and give it to `create_agent(..., store=store)` or `graph.compile(store=store)`):
        ```python
        store.put(("alice", "memories"), "diet", {"text": "Alice is vegetarian."})
        print(store.get(("alice", "memories"), "diet").value)  # -> {'text': 'Alice is vegetarian.'}
        hits = store.search(("alice",), query="what does she eat?", limit=3)
        print(hits[0].key)  # -> diet
        print(store.list_namespaces(prefix=("alice",)))  # -> [('alice', 'memories')]
        ```

    Async: `aput`, `aget`, `asearch`, `adelete`, `alist_namespaces` (the engine work runs in a
    worker thread).

    Args:
        memory: The episodex memory whose engine and embedder hold the items (it stays yours
            to close), or an `ItemStore`.
        agent_id: The agent every item belongs to.
        user_id: Fix the user for every namespace instead of reading it from one.
        user_position: Which namespace label is the user (0: the first; below 16, the most
            labels a namespace holds).
        index: Which fields of a value are embedded and indexed: `{"fields": ["text"]}`, with
            LangGraph's path syntax (`"a.b"`, `"list[*].text"`, `"$"` for the whole value,
            the default). The embedder is the memory's, so `embed` is refused and `dims`
            must match it. Per put, `index=False` stores an item without vectors and a list
            of paths overrides the fields.
        dense_weight: RRF weight of the dense search in `search(query=...)`.
        bm25_weight: RRF weight of the BM25 search.
    """

    supports_ttl: bool = False

    def __init__(
        self,
        memory: EpisodicMemory | SyncEpisodicMemory | ItemStore,
        *,
        agent_id: str = "langgraph",
        user_id: str | None = None,
        user_position: int = 0,
        index: IndexConfig | None = None,
        dense_weight: float = 0.3,
        bm25_weight: float = 0.7,
    ) -> None:
        self.items = (
            memory if isinstance(memory, ItemStore) else ItemStore(memory.engine, memory.embedder)
        )
        # The store's id rule and the weights' range, checked now: every operation would
        # refuse them, so a graph would fail at its first memory call, not here.
        check_ids({"agent_id": agent_id, "user_id": user_id})
        for label, weight in (("dense_weight", dense_weight), ("bm25_weight", bm25_weight)):
            if (
                isinstance(weight, bool)
                or not isinstance(weight, Real)  # pyright: ignore[reportUnnecessaryIsInstance]
                or not _finite(weight)
                or weight < 0
            ):
                raise ConfigurationError(f"{label} must be a finite number >= 0, got {weight!r}")
        if not dense_weight and not bm25_weight:
            # Every search with a query would be refused: the store would fail in the middle
            # of a graph run, at the first lookup of a tool or node, not here.
            raise ConfigurationError(
                "dense_weight and bm25_weight are both 0: give one a weight > 0 "
                "(0.3 and 0.7 by default)"
            )
        if (
            isinstance(user_position, bool)
            or not isinstance(user_position, Integral)  # pyright: ignore[reportUnnecessaryIsInstance]
            or user_position < 0
        ):
            raise ConfigurationError(
                f"user_position must be an integer >= 0, got {user_position!r}"
            )
        depth = ItemStore.max_namespace_depth
        if user_id is None and user_position >= depth:
            # A namespace long enough to hold the user there is too long to store, so every
            # operation would be refused.
            raise ConfigurationError(
                f"user_position is {user_position} but a namespace holds at most {depth} "
                f"labels: give a position below {depth}, or fix the user with user_id="
            )
        self.agent_id = agent_id
        self.user_id = user_id
        # A numpy number is taken as the Python number it equals (never a bool, above).
        self.user_position = int(user_position)
        self.fields = _index_fields(index, self.items.embedder.dimension)
        self.dense_weight = float(dense_weight)
        self.bm25_weight = float(bm25_weight)

    # -- LangGraph's two entry points ----------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations; reads see the store as it was before this batch's writes.

        Every operation is checked before any runs, and the puts and deletes are made in one
        write: a batch with a bad operation raises a typed error and changes nothing
        (LangGraph's `InMemoryStore` may keep the puts before the bad one). A write that fails
        changes nothing on the embedded store; on a Qdrant server the error says which items
        it may have reached (`episodex.ItemStore.write`).
        """
        return self._run(list(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` with the engine work in a worker thread.

        A caller that gives up (a timeout, a cancelled task) leaves the batch to run to its
        end, and its outcome is logged, as the core's writes do: with `asyncio.to_thread` its
        puts and deletes were made or not depending on whether its thread had started.
        """
        batch = list(ops)
        context = contextvars.copy_context()  # the caller's context variables come along

        def call() -> list[Result]:
            return context.run(self._run, batch)

        work = asyncio.get_running_loop().run_in_executor(None, call)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            work.add_done_callback(_log_abandoned)
            raise

    # -- translation to the core -----------------------------------------------------------

    def _run(self, ops: list[Op]) -> list[Result]:
        ops = [_shaped(op) for op in ops]
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, PutOp) and op.ttl is not None:
                # A NotImplementedError too, as LangGraph's own refusal of a ttl in `put`.
                raise NotSupportedError(
                    "EpisodexStore does not support TTLs: put without ttl (or ttl=None, and no "
                    "default_ttl in ttl_config) and delete items yourself when they expire; "
                    "nothing of this batch was written"
                )
        results: list[Result] = [None] * len(ops)
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            found = self.items.get_many(self._ref(op.namespace, op.key) for _, op in gets)
            for (i, _), item in zip(gets, found, strict=True):
                results[i] = None if item is None else _item(item)
        writes: dict[ItemRef, PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list(op)
            elif isinstance(op, PutOp):
                ref = self._ref(op.namespace, op.key)
                writes.pop(ref, None)  # the last write of an item wins, as if run in order
                writes[ref] = op
            elif not isinstance(op, GetOp):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        if writes:
            self.items.write(
                puts=[
                    ItemPut(ref, op.value, self._text(op))
                    for ref, op in writes.items()
                    if op.value is not None
                ],
                deletes=[ref for ref, op in writes.items() if op.value is None],
            )
        return results

    def _user(self, namespace: Sequence[str], what: str) -> str:
        if self.user_id is not None:
            return self.user_id
        position = self.user_position
        if len(namespace) <= position or namespace[position] == _WILDCARD:
            raise ValidationError(
                f"{what} {tuple(namespace)!r} does not name a user: label {position} of a "
                "namespace is the user id (e.g. ('alice', 'memories')); searches and listings "
                "never span users. Give EpisodexStore(user_id=...) to fix one user instead"
            )
        return namespace[position]

    def _ref(self, namespace: tuple[str, ...], key: str) -> ItemRef:
        return ItemRef(self._user(namespace, "namespace"), self.agent_id, namespace, key)

    def _text(self, op: PutOp) -> str | None:
        """The text a put indexes; `ValidationError` (before anything is written) if none can be."""
        index: object = op.index
        if index is False:
            return None
        # A string is refused, not read as a list of one-letter paths: that would index
        # nothing, and the item would silently never be found by a query.
        if index is not None and (
            not isinstance(index, list | tuple)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not all(isinstance(path, str) and path for path in index)  # pyright: ignore[reportUnnecessaryIsInstance, reportUnknownVariableType]
        ):
            raise ValidationError(
                f"put {op.key!r}: index must be False, None or a list of field paths such as "
                f"['text'], got {index!r}"
            )
        fields: list[str] = self.fields if index is None else list(index)  # pyright: ignore[reportUnknownArgumentType]
        value: Mapping[str, Any] = op.value or {}
        try:
            texts = [text for path in fields for text in get_text_at_path(value, path)]
        except (TypeError, ValueError) as exc:
            # LangGraph reads the fields (serialising `$`, the whole value) before the item
            # store has checked the value is JSON: say which put is wrong, in episodex's type.
            raise ValidationError(
                f"put {op.key!r}: value must be a JSON object (str keys, JSON values): {exc}"
            ) from None
        return "\n".join(texts) if texts else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        found = self.items.search(
            user_id=self._user(op.namespace_prefix, "namespace_prefix"),
            agent_id=self.agent_id,
            namespace_prefix=op.namespace_prefix,
            query=op.query,
            filter=op.filter,
            limit=op.limit,
            offset=op.offset,
            dense_weight=self.dense_weight,
            bm25_weight=self.bm25_weight,
        )
        return [
            SearchItem(
                namespace=item.namespace,
                key=item.key,
                value=item.value,
                created_at=item.created_at,
                updated_at=item.updated_at,
                score=item.score,
            )
            for item in found
        ]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        paths: dict[str, tuple[str, ...]] = {}
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise ValidationError(f"unknown namespace match type {condition.match_type!r}")
            if condition.match_type in paths:
                raise ValidationError(
                    f"list_namespaces takes one {condition.match_type} condition, got several"
                )
            paths[condition.match_type] = tuple(condition.path)
        prefix, suffix = paths.get("prefix", ()), paths.get("suffix", ())
        return self.items.list_namespaces(
            user_id=self._user(prefix, "list_namespaces prefix"),
            agent_id=self.agent_id,
            prefix=prefix,
            suffix=suffix,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )


def _log_abandoned(work: asyncio.Future[list[Result]]) -> None:
    if work.cancelled():  # the event loop shut down before the thread finished
        return
    exc = work.exception()
    if exc is None:
        logger.info("a store batch was cancelled by its caller but completed: its writes are made")
    else:
        logger.warning(
            "a store batch was cancelled by its caller, then failed: %s: %s",
            type(exc).__name__,
            exc,
        )


def _shaped(op: Op) -> Op:
    """`op` with its namespace (or listing paths) as a tuple of strings, or `ValidationError`.

    Ops are plain named tuples any caller can fill: a list namespace would be unhashable as a
    write's key, and a string path would be read letter by letter (`"bob"` naming user `"b"`).
    """
    if isinstance(op, GetOp | PutOp):
        return op._replace(namespace=_labels(op.namespace, f"{type(op).__name__} namespace"))
    if isinstance(op, SearchOp):
        return op._replace(namespace_prefix=_labels(op.namespace_prefix, "namespace_prefix"))
    if isinstance(op, ListNamespacesOp) and op.match_conditions is not None:  # pyright: ignore[reportUnnecessaryIsInstance]
        conditions: list[MatchCondition] = []
        for condition in op.match_conditions:
            if not isinstance(condition, MatchCondition):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValidationError(
                    f"list_namespaces conditions must be MatchCondition objects, got {condition!r}"
                )
            conditions.append(
                condition._replace(path=_labels(condition.path, "list_namespaces path"))
            )
        return op._replace(match_conditions=tuple(conditions))
    return op


def _labels(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, tuple | list) and all(isinstance(label, str) for label in value):  # pyright: ignore[reportUnknownVariableType]
        return tuple(value)  # pyright: ignore[reportUnknownArgumentType]
    raise ValidationError(
        f"{what} must be a tuple of strings such as ('alice', 'memories'), got {value!r}"
    )


def _index_fields(index: IndexConfig | None, dimension: int) -> list[str]:
    if index is None:
        return ["$"]
    if not isinstance(index, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            f"index must be a dict such as {{'fields': ['text']}}, got {index!r}"
        )
    if "embed" in index:
        raise ConfigurationError(
            "EpisodexStore embeds with the memory's embedder: leave out index['embed'] and "
            "give EpisodicMemory(embedder=...) to use another model"
        )
    dims = index.get("dims")
    if dims is not None and dims != dimension:
        raise ConfigurationError(
            f"index['dims'] is {dims} but the memory's embedder makes {dimension}-dimensional "
            "vectors; leave out dims"
        )
    unknown = sorted(set(index) - {"dims", "fields", "embed"})
    if unknown:
        raise ConfigurationError(f"unknown index settings {unknown}; EpisodexStore takes 'fields'")
    fields = index.get("fields")
    if fields is None:
        return ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"index['fields'] must be a list of paths, got {fields!r}")
    return list(fields)


def _item(item: StoredItem) -> Item:
    return Item(
        value=item.value,
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def _finite(value: float) -> bool:
    """Whether `value` is finite; False for an int too large to be a float (not an error)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
