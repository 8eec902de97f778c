"""Re-embedding a conversation-episode collection with another embedder or stream set.

The stored texts are all a re-index needs (never the old model): every episode is copied,
payload untouched, into a staging collection whose vectors the new `EpisodeStore` computes, and
the engine then switches the collection's name to it in one atomic step. Until that step the
old collection is the store; a run killed at any point loses nothing, and the next run finds
the staging collection (its name is a digest of the source and the target) and embeds only
what is not there yet. A point that cannot be read back (written by another program or an
older release) is carried over as stored and logged, its vectors made from whatever summary
text it has (`stored_texts`): dropped, it would be lost; refused, one such point would keep the
whole store on the old model.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from episodex._common.errors import ConfigurationError
from episodex._common.unreadable import report_unreadable
from episodex._common.validation import require_callback, require_int
from episodex._embedders.base import Embedder
from episodex._engines.base import STAGING_DIGITS, STAGING_MARK, ReindexableEngine
from episodex._engines.collection import delete_checked
from episodex._engines.locks import count_switch
from episodex._engines.plan import Filter, HasId, Hit, Point
from episodex._episodes.model import payload_problem, stored_texts
from episodex._episodes.pending import PENDING

if TYPE_CHECKING:
    from episodex._episodes.store import EpisodeStore

__all__ = ["ReindexReport", "reindex"]

_EVERYTHING = Filter()
_log = logging.getLogger("episodex")


@dataclass
class ReindexReport:
    """What a re-index did.

    Attributes:
        previous_embedder: The model id the collection was built with.
        embedder: The model id it is built with now.
        episodes: Episodes in the collection after the switch.
        embedded: Episodes embedded by this run.
        resumed: Episodes an interrupted earlier run had embedded already.
        removed: Staged episodes dropped because they were forgotten meanwhile.
    """

    previous_embedder: str
    embedder: str
    episodes: int
    embedded: int
    resumed: int
    removed: int

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people."""
        resumed = f", {self.resumed} from an interrupted run" if self.resumed else ""
        return (
            f"re-indexed {self.episodes} episode(s) with {self.embedder} (was "
            f"{self.previous_embedder}): {self.embedded} embedded now{resumed}"
        )


def staging_name(store: EpisodeStore, embedder: Embedder, generation: str) -> str:
    """The staging collection of re-indexing `store`'s current collection with `embedder`.

    The name digests everything the new vectors depend on (embedder, BM25 settings, stream set,
    sparse model), so a resumed run only reuses a staging collection built the same way.
    """
    sparse_model = store.splade.model_id if store.splade is not None else None
    target = [
        generation,
        embedder.model_id,
        embedder.dimension,
        dict(store.bm25.config),
        list(store.streams),
        sparse_model,
    ]
    digest = hashlib.sha256(json.dumps(target, sort_keys=True).encode()).hexdigest()
    digest = digest[:STAGING_DIGITS]
    return f"{store.collection}{STAGING_MARK}{digest}"


def _written(
    engine: ReindexableEngine, collection: str, flt: Filter = _EVERYTHING
) -> dict[str, object]:
    """Each point's id and when it was last written (`created_at`, set by every write)."""
    found: dict[str, object] = {}
    offset: str | None = None
    while True:
        hits, offset = engine.scroll(
            collection, flt, limit=1024, with_payload=("created_at",), offset=offset
        )
        found.update((h.id, h.payload.get("created_at")) for h in hits)
        if offset is None:
            return found


def _same(staged: object, stored: object) -> bool:
    """Whether two `created_at` values are one; a NaN (another program's) is one with itself.

    Otherwise its point would be embedded again each time the staging collection catches up.
    """
    return staged == stored or (staged != staged and stored != stored)


def _copy(target: EpisodeStore, hits: Sequence[Hit]) -> None:
    if not hits:
        return
    for h in hits:
        problem = payload_problem(h.payload)
        # A killed call's record is carried over too: the store the re-index opens takes the
        # call back (`pending`).
        if problem is not None and h.payload.get(PENDING) is not True:
            # Carried over all the same (`stored_texts`): dropping it would lose it, refusing
            # would leave the whole store on the old model for one point.
            report_unreadable("episode", h.id, problem, done="a re-index carries it over as stored")
    vectors = target.vectors([stored_texts(h.payload) for h in hits])
    points = [
        Point(id=h.id, dense=dense, sparse=sparse, payload=dict(h.payload))
        for h, (dense, sparse) in zip(hits, vectors, strict=True)
    ]
    target.engine.upsert(target.collection, points)


def _marker(engine: ReindexableEngine) -> Callable[[str, str | None], None] | None:
    """The engine's `mark_reindexing` where writers of other processes share the collection."""
    if getattr(engine, "kind", None) in ("edge", "memory"):
        return None  # one process writes: its write lock holds them off
    return getattr(engine, "mark_reindexing", None)


def _unmark(mark: Callable[[str, str | None], None], source: str) -> None:
    """Take the mark off after a re-index that did not switch; a failure is logged."""
    try:
        mark(source, None)
    except Exception:
        _log.warning(
            "could not take the re-index mark off %r: writes of other processes are refused "
            "until a re-index of it switches",
            source,
            exc_info=True,
        )


def _catch_up(
    engine: ReindexableEngine,
    store: EpisodeStore,
    target: EpisodeStore,
    staging: str,
    batch_size: int,
) -> tuple[dict[str, object], list[str], int]:
    """Bring the staging collection level with what was added, replaced or forgotten since.

    Returns each stored id with its write time, the staged ids dropped, and how many episodes
    were embedded.
    """
    source = store.collection
    embedded = 0
    wanted, staged = _written(engine, source), _written(engine, staging)
    # Missing from the staging collection, or staged before it was written again.
    missing = sorted(i for i, at in wanted.items() if i not in staged or not _same(staged[i], at))
    for start in range(0, len(missing), batch_size):
        chunk = tuple(missing[start : start + batch_size])
        hits, _ = engine.scroll(source, Filter(must=(HasId(chunk),)), limit=len(chunk))
        _copy(target, hits)
        embedded += len(hits)
    extra = sorted(staged.keys() - wanted.keys())
    for start in range(0, len(extra), 1024):
        delete_checked(engine, staging, Filter(must=(HasId(tuple(extra[start : start + 1024])),)))
    return wanted, extra, embedded


def reindex(
    store: EpisodeStore,
    embedder: Embedder,
    *,
    batch_size: int = 256,
    on_progress: Callable[[int, int], object] | None = None,
) -> tuple[EpisodeStore, ReindexReport]:
    """Re-embed `store`'s collection with `embedder`; returns the store that serves it now.

    Args:
        store: The store to re-index (its embedder may differ from the stored one).
        embedder: The embedder to build the collection with.
        batch_size: Episodes embedded and written per batch.
        on_progress: Called with (episodes done, episodes in all) after each batch.
    """
    from episodex._episodes.store import EpisodeStore

    batch_size = require_int("batch_size", batch_size, minimum=1)
    require_callback("on_progress", on_progress)
    engine = store.engine
    if not isinstance(engine, ReindexableEngine):
        raise ConfigurationError(
            f"{type(engine).__name__} cannot switch collections, so it cannot re-index; export "
            "the store and import the file into a new store opened with the new embedder"
        )
    source = store.collection
    previous = store.stored_embedder
    staging = staging_name(store, embedder, engine.generation(source))
    target = EpisodeStore(
        engine,
        embedder,
        bm25=store.bm25,
        splade=store.splade,
        collection=staging,
        _staging_of=source,
    )
    total = engine.count(source, _EVERYTHING)
    done = embedded = resumed = 0
    offset: str | None = None
    while True:
        hits, offset = engine.scroll(source, _EVERYTHING, limit=batch_size, offset=offset)
        if hits:
            have = _written(engine, staging, Filter(must=(HasId(tuple(h.id for h in hits)),)))
            todo = [h for h in hits if h.id not in have]
            _copy(target, todo)
            embedded += len(todo)
            resumed += len(hits) - len(todo)
            done += len(hits)
            if on_progress is not None:
                on_progress(done, max(total, done))
        if offset is None:
            break
    # Writes made by this store meanwhile: hold them off while the staging collection catches
    # up with what was added, replaced or forgotten, then switch.
    # On a server, writers of other processes hold no lock of this one: the collection is
    # marked first, and each of them reads the mark after its write (`EpisodeStore.write_all`),
    # so a write that found no mark was made before it and is copied below, and one that found
    # it is taken back. Without the mark, a write landing after the catch-up read the
    # collection was deleted with it.
    mark = _marker(engine)
    with store.write_lock:
        if mark is not None:
            mark(source, staging)
        try:
            wanted, extra, caught_up = _catch_up(engine, store, target, staging, batch_size)
        except BaseException:
            if mark is not None:
                _unmark(mark, source)
            raise
        # Recalls under way on `store` embedded their queries with its models: from here on
        # they ask again of the store that follows it (see `EpisodeStore.recall`).
        store.retired = True
        try:
            engine.switch_collection(source, staging)
        except BaseException:
            store.retired = False  # not switched: the collection is still this store's
            if mark is not None:
                _unmark(mark, source)
            raise
        # Other stores of this process on the collection learn of it without a request.
        count_switch(engine, source)
        switched = EpisodeStore(
            engine, embedder, bm25=store.bm25, splade=store.splade, collection=source
        )
        # Writes waiting for the lock embedded with the old models: they go to the new store.
        store.successor = switched
    report = ReindexReport(
        previous_embedder=previous,
        embedder=embedder.model_id,
        episodes=len(wanted),
        embedded=embedded + caught_up,
        resumed=resumed,
        removed=len(extra),
    )
    return switched, report
