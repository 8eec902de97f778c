"""The synchronous core of conversation-episode memory; `EpisodicMemory` wraps it.

Every public method takes `user_id` and `agent_id` and builds its filter from them first: there
is no read, count, export or delete that can reach another tenant's points.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Unpack, cast

import numpy as np
import numpy.typing as npt

from episodex._common.errors import (
    EmbedderMismatchError,
    EngineError,
    NotFoundError,
    ValidationError,
)
from episodex._common.helpers import both
from episodex._common.model import parse_to_write
from episodex._common.unreadable import read_readable
from episodex._common.validation import (
    require_id,
    require_int,
    require_share,
    require_text,
    require_weight,
)
from episodex._embedders.base import Embedder, embed_documents, embed_query
from episodex._embedders.splade import SpladeEncoder
from episodex._engines.base import (
    STAGING_OF,
    Engine,
    ReindexableEngine,
    StagedEngine,
    StreamRanks,
)
from episodex._engines.collection import (
    collection_bm25,
    delete_checked,
    delete_counted,
    foreign_claims,
    open_collection,
    stored_points,
    tenant_filter,
)
from episodex._engines.locks import switch_count, write_lock
from episodex._engines.plan import (
    CollectionSpec,
    Filter,
    Fused,
    HasId,
    Hit,
    Match,
    MatchAny,
    Point,
    Range,
    SparseVec,
    Stream,
)
from episodex._engines.sparse import Bm25Encoder, require_bm25
from episodex._episodes import pending, transfer
from episodex._episodes import stats as stats_
from episodex._episodes.model import (
    SPEAKER_KEYS,
    ConversationEpisode,
    payload_problem,
    payload_to_item,
    query_speaker_terms,
    readable,
)
from episodex._episodes.options import (
    DEFAULT_WEIGHTS,
    INT_MINIMUMS,
    LEARNED,
    STREAMS,
    RecallOptions,
    check_recall_options,
    seen_metadata_problem,
    weights_problem,
)
from episodex._episodes.periods import named_period, period_filter
from episodex._episodes.transfer import ImportReport

__all__ = ["EpisodeStore", "ImportReport", "RecallResult"]

COLLECTION = "episodes"
REINDEX_ADVICE = (
    "open it with the models it was made with, or re-embed it with this memory's: run "
    "`episodex reindex` (`episodex --path <folder> reindex` for a store elsewhere), or in "
    "Python `EpisodicMemory(<path>, embedder=..., for_reindex=True)` then `await "
    "memory.reindex()` (or export it and import the file into a new store)"
)
BM25_REINDEX_ADVICE = (
    "to change them, re-index it: `EpisodicMemory(<path>, bm25=Bm25Encoder(...), "
    "for_reindex=True)` then `await memory.reindex()`"
)
#: Reciprocal Rank Fusion constant unless a recall says otherwise (chosen with the weights).
DEFAULT_RRF_K = 20
#: Fusion weight of the `dated` stream when a query names a period (chosen the same way).
DEFAULT_DATED_WEIGHT = 0.3
#: Fusion weights of the `speaker` and `speaker_bm25` streams when a query names a speaker, and
#: the previous-conversations list's `conversation_diversity` (chosen the same way).
DEFAULT_SPEAKER_WEIGHTS = {"speaker": 0.2, "speaker_bm25": 0.1}
DEFAULT_CONVERSATION_DIVERSITY = 0.03
RecallResult = dict[str, list[dict[str, Any]]]
#: One episode's vectors while a `memorize_many` holds them: dense rows, sparse (indices, values).
_Packed = tuple[
    dict[str, npt.NDArray[np.float32]],
    dict[str, tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]],
]
#: Episodes to write in one engine write, with their vectors, or None to embed them then.
Batch = tuple[Sequence[ConversationEpisode], Sequence[_Packed] | None]

logger = logging.getLogger("episodex")


# The streams that search the dense vectors (the others search the sparse ones).
_DENSE_LABELS = ("short", "long", "dated", "speaker")


def _stream_labels(
    weights: Mapping[str, float],
    *,
    period: bool,
    speakers: bool,
    bm25_terms: bool,
    learned_terms: bool,
) -> list[str]:
    """The labels of the streams a recall runs for a query, in the order they are run.

    The one rule both `recall` and `score_ceiling` follow. `period`: the query names a period
    (looked for only when `dated_weight` is above 0); `speakers`: it has a word to match
    speakers with (looked for only when a speaker weight is above 0); `bm25_terms` /
    `learned_terms`: its BM25 / SPLADE query vector has an index (False when that encoder is
    not run or absent). With both True, the streams the query could run: what to encode.
    """
    labels = [name for name in ("short", "long") if weights[name] > 0]
    if period and weights["dated"] > 0:
        labels.append("dated")
    if speakers and weights["speaker"] > 0:
        labels.append("speaker")
    if bm25_terms:
        if weights["bm25"] > 0:
            labels.append("bm25")
        if speakers and weights["speaker_bm25"] > 0:
            labels.append("speaker_bm25")
    if learned_terms:
        labels.extend(name for name in LEARNED if weights[name] > 0)
    return labels


def _int_option(options: RecallOptions, name: str, default: int) -> int:
    """An integer recall option, or its default; at least its `INT_MINIMUMS` value."""
    return require_int(name, options.get(name, default), minimum=INT_MINIMUMS[name])


class EpisodeStore:
    """Conversation episodes in one collection of an engine (synchronous, thread-safe).

    Args:
        engine: The vector engine.
        embedder: The dense embedder; its id and dimension are recorded in the collection.
        bm25: The BM25 encoder; None for the settings the collection was made with (the
            defaults for a new one). Other settings raise `EmbedderMismatchError`.
        splade: The learned sparse encoder, or None for a store without its two streams.
        collection: Collection name.
        for_reindex: Open a collection built with another embedder so that it can be
            re-indexed: memorizing, importing and recalling raise `EmbedderMismatchError`
            until then; reading, exporting and forgetting work.
    """

    def __init__(
        self,
        engine: Engine,
        embedder: Embedder,
        *,
        bm25: Bm25Encoder | None = None,
        splade: SpladeEncoder | None = None,
        collection: str = COLLECTION,
        for_reindex: bool = False,
        _staging_of: str | None = None,
    ) -> None:
        bm25 = require_bm25(bm25)
        self.engine = engine
        self.embedder = embedder
        self.bm25 = bm25 or Bm25Encoder()  # until the collection's own settings are read
        self.splade = splade
        self.collection = collection
        self.streams = tuple(s for s in STREAMS if s not in LEARNED or splade is not None)
        spec = CollectionSpec(
            name=collection,
            dense={"short": embedder.dimension, "long": embedder.dimension},
            sparse=("bm25",),
            sparse_plain=LEARNED if splade is not None else (),
            tenant_key="user_id",
            keywords=(
                "agent_id",
                "conversation_id",
                "flows_activated",
                "tools_invoked",
                SPEAKER_KEYS,
            ),
            floats=("timestamp_begin", "timestamp_end"),
        )
        settings: dict[str, Any] = {
            "embedder_id": embedder.model_id,
            "kind": "conversation_episodes",
            "schema": 1,
            "where": f"the episode collection {collection!r}",
            "mismatch_advice": REINDEX_ADVICE,
            "bm25": self.bm25.config,
            "streams": list(self.streams),
            "sparse_model": splade.model_id if splade is not None else None,
        }
        # Made by a re-index of `_staging_of`, or ("") by none: only a collection marked as its
        # copy is ever dropped as a re-index's abandoned copy or reached by its forgets, and a
        # new collection of the staging form the user named is marked as none
        # (`is_staging_copy`).
        settings[STAGING_OF] = _staging_of or ""
        #: Why vectors cannot be used (the collection awaits a re-index), or None.
        self.mismatch: str | None = None
        try:
            stored = open_collection(engine, spec, **settings)
            self.bm25 = collection_bm25(stored, bm25, settings["where"], BM25_REINDEX_ADVICE)
        except EmbedderMismatchError as exc:
            if not for_reindex:
                raise
            self.mismatch = str(exc)
            # Read the manifest as stored, without the check. A re-index keeps the stored BM25
            # settings, or builds the collection with those given.
            stored = engine.ensure_collection(spec)
            self.bm25 = bm25 or collection_bm25(stored, None, settings["where"])
        #: The model id the collection was built with.
        self.stored_embedder: str = str(stored.get("embedder", embedder.model_id))
        # Shared with every other store on this storage and collection in this process.
        self._write_lock = write_lock(engine, self.collection)
        #: The store serving this collection after a re-index switched it (set under the write
        #: lock): writes that were waiting for the lock go to it, embedded by its models.
        self.successor: EpisodeStore | None = None
        #: Set by a re-index (under the write lock) just before it switches the collection to
        #: vectors of other models: a recall that ran meanwhile asks `successor` again.
        self.retired = False
        # Which collection serves this one now: another memory on the same store may re-index
        # it, and this store's models would no longer be the collection's. Checked before every
        # write (under the write lock the re-index holds too) and, where it is only a lookup
        # (Qdrant Edge, qdrant-client `:memory:`), before every recall. On a server, a recall
        # checks only after a re-index by this process (`switch_count`): asking the server
        # would cost a request per recall, so another process's re-index goes unseen there.
        self._generation = (
            engine.generation(collection) if isinstance(engine, ReindexableEngine) else None
        )
        self._cheap_generation = getattr(engine, "kind", None) in ("edge", "memory")
        # On a server, another process's re-index holds no lock of this one: a write is
        # confirmed after it is made (`_confirm_written`).
        self._moves: Callable[[str, str], str | None] | None = (
            None
            if self._cheap_generation or self._generation is None
            else getattr(engine, "reindexing", None)
        )
        self._switches = switch_count(engine, collection)
        #: Whether a call of several engine writes records them (see `pending`).
        self._recorded = pending.records_writes(engine)
        #: Whether a call killed between its writes was looked for (and taken back).
        self._settled = not self._recorded or self.mismatch is not None
        # A call killed between its writes: taken back before anything reads or writes.
        # (Awaiting a re-index, its replaced episodes cannot be embedded: the re-index
        # carries the records over, and the store it opens takes the call back.)
        self._settle(required=False)

    def _settle(self, *, required: bool) -> None:
        """Take back what a call killed between its writes left (`pending`), once.

        Opening a store does it, but an engine that fails to read then (an outage a test
        injects) must not make the store impossible to open: the failure is logged and the
        next call of several writes, which would reuse the records' ids, does it first
        (`required`: its failure is that call's).
        """
        if self._settled:
            return
        with self._write_lock:
            if self._settled:
                return
            try:
                left = pending.find(self.engine, self.collection)
                if left is not None:
                    pending.take_back(self.engine, self.collection, left, self.vectors)
            except Exception:
                if required:
                    raise
                logger.warning(
                    "could not look for a write of several batches killed midway in %r; "
                    "looked for again before the next such write",
                    self.collection,
                    exc_info=True,
                )
                return
            self._settled = True

    @property
    def write_lock(self) -> threading.RLock:
        """Held while this store writes, forgets, or switches a re-index.

        Every store on the same storage and collection in this process holds the same lock
        (`episodex._engines.locks.write_lock`).
        """
        return self._write_lock

    def _require_vectors(self) -> None:
        """Refuse to embed with this store's models where the collection holds others.

        A query of the old models would rank the new models' vectors, silently: refused
        wherever the check is a lookup, or once a store of this process switched the
        collection. (A write asks the engine again under the write lock, in `write_all`.)
        """
        if self.mismatch is not None:
            raise EmbedderMismatchError(self.mismatch)
        switches = switch_count(self.engine, self.collection)
        if self._cheap_generation or switches != self._switches:
            self._require_current()
            self._switches = switches  # still current: no need to ask again until the next

    def _require_current(self) -> None:
        """Refuse to embed for a collection another memory has re-indexed since this opened it.

        Its vectors may come from other models now (or other streams): a query or an episode
        embedded with this store's models would be compared with them, silently. This store's
        own re-index hands its calls on to `successor` instead.
        """
        if self._generation is None or self.retired or self.successor is not None:
            return
        engine = cast(ReindexableEngine, self.engine)
        if engine.generation(self.collection) != self._generation:
            raise EmbedderMismatchError(
                f"the episode collection {self.collection!r} was re-indexed by another memory "
                "on the same store since this one was opened, and may hold vectors of other "
                "models now; close this memory and open the store again"
            )

    # -- writing -------------------------------------------------------------------------

    def vectors(
        self, summaries: Sequence[tuple[str, str]]
    ) -> list[tuple[dict[str, list[float]], dict[str, SparseVec]]]:
        """The named dense and sparse vectors of each `(short, long)` summary pair.

        What a point stores besides its payload: memorizing and re-indexing both build points
        from it, so a new stream is added in one place.
        """
        texts = [text for pair in summaries for text in pair]
        dense = embed_documents(self.embedder, texts)
        joined = [f"{short}\n{long}" for short, long in summaries]
        learned = learned_short = None
        if self.splade is not None:
            # The short summary gets a vector of its own: in the joined text the long
            # summary's neighbouring lines outweigh the few words that make the episode.
            learned = self.splade.documents(joined)
            learned_short = self.splade.documents([short for short, _ in summaries])
        out: list[tuple[dict[str, list[float]], dict[str, SparseVec]]] = []
        for i, text in enumerate(joined):
            sparse = {"bm25": self.bm25.document(text)}
            if learned is not None and learned_short is not None:
                sparse["splade"] = learned[i]
                sparse["splade_short"] = learned_short[i]
            out.append(
                ({"short": dense[2 * i].tolist(), "long": dense[2 * i + 1].tolist()}, sparse)
            )
        return out

    def _packed(self, episodes: Sequence[ConversationEpisode]) -> list[_Packed]:
        """Each episode's vectors, compact until written (float32; uint32 indices, as in Qdrant)."""
        vectors = self.vectors([(ep.short_summary, ep.long_summary) for ep in episodes])
        return [
            (
                {k: np.asarray(v, dtype=np.float32) for k, v in dense.items()},
                {
                    k: (np.asarray(v.indices, dtype=np.uint32), np.asarray(v.values, np.float32))
                    for k, v in sparse.items()
                },
            )
            for dense, sparse in vectors
        ]

    @staticmethod
    def _point(ep: ConversationEpisode, packed: _Packed, now: float) -> Point:
        dense, sparse = packed
        return Point(
            id=ep.point_id or str(uuid.uuid4()),
            dense={k: v.tolist() for k, v in dense.items()},
            sparse={k: SparseVec(i.tolist(), v.tolist()) for k, (i, v) in sparse.items()},
            payload=ep.to_payload(created_at=now),
        )

    def memorize_many(
        self,
        episodes: Iterable[ConversationEpisode | Mapping[str, Any]],
        *,
        batch_size: int = 256,
    ) -> list[str]:
        """Validate and embed every episode, then write them in batches; returns point ids.

        All or nothing: a bad episode raises `ValidationError` naming its position, and an
        embedder failure raises, before anything is written; a write that fails after earlier
        batches were written takes those back (new episodes deleted, episodes it replaced
        restored) before its error is raised, and the failed write too (a Qdrant server can
        apply a write and still fail to answer); on a server a call of one write is taken back
        too, the episodes it replaced restored. Every episode's vectors are held until the end
        (about 4.5 KB each), so a caller with hundreds of thousands of episodes calls in chunks.
        """
        batch_size = require_int("batch_size", batch_size, minimum=1)
        self._require_vectors()
        if isinstance(episodes, Mapping | str | bytes):
            raise ValidationError("memorize_many takes a list of episodes, not a single one")
        if not isinstance(episodes, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"memorize_many takes a list of episodes, got {type(episodes).__name__}"
            )
        # An episode instance too: a copy (`model_copy`) may hold an id of another spelling.
        parsed = [
            parse_to_write(ConversationEpisode, e, where=f"episode {i}: ")
            for i, e in enumerate(episodes)
        ]
        return self.write_all(parsed, batch_size=batch_size)

    def write_all(
        self,
        parsed: Sequence[ConversationEpisode],
        *,
        batch_size: int = 256,
        on_progress: Callable[[int], object] | None = None,
        call: str = "memorize_many",
    ) -> list[str]:
        """Embed validated episodes, then write them all or none (see `memorize_many`).

        `on_progress` is called with the number of episodes embedded so far after each batch;
        the writes come after the last one. `call` names the public call an error reports
        (`memorize_many`, `import_`).
        """
        if self.mismatch is not None:
            # Every writer comes through here (memorize_many, import, the recorder): vectors of
            # this store's models must not join a collection built with others.
            raise EmbedderMismatchError(self.mismatch)
        packed: list[_Packed] = []
        for start in range(0, len(parsed), batch_size):
            packed.extend(self._packed(parsed[start : start + batch_size]))
            if on_progress is not None:
                on_progress(len(packed))

        def batches(store: EpisodeStore) -> Iterator[Batch]:
            for start in range(0, len(parsed), batch_size):
                chunk = parsed[start : start + batch_size]
                # Re-indexed while this call embedded: the new store's models embed again.
                yield chunk, packed[start : start + batch_size] if store is self else None

        # Every write holds the lock, not only those with explicit ids: a re-index holds it
        # while it catches up with the collection and switches it, and a write landing in the
        # old collection meanwhile would be dropped with it. Only the writes are under it.
        return self.write_batches(batches, writes=-(-len(parsed) // batch_size), call=call)

    def write_batches(
        self,
        batches: Callable[[EpisodeStore], Iterable[Batch]],
        *,
        writes: int,
        call: str,
        on_progress: Callable[[int], object] | None = None,
    ) -> list[str]:
        """Write `writes` batches of validated episodes under the write lock, all or none.

        `batches` is called once, under the lock, with the store that writes them (this one,
        or the one a re-index handed the collection to); each batch comes with its vectors, or
        None to have that store embed it then. A batch made after the first write (an import
        embeds each one as it goes) may fail: the batches written are taken back, as when a
        later write fails. Only one batch's episodes and vectors need to be held at a time.
        `on_progress` is called with the number of episodes embedded so far after each batch
        this call embeds.
        """
        if self.mismatch is not None:
            raise EmbedderMismatchError(self.mismatch)
        with self._write_lock:
            if self.successor is not None:
                # Re-indexed while this call embedded: the collection is the new store's now.
                return self.successor.write_batches(
                    batches, writes=writes, call=call, on_progress=on_progress
                )
            self._require_current()  # re-indexed by another memory: refused, nothing written
            # One engine write is atomic; several are made so by taking back the earlier ones,
            # and each carries a record of itself for a process killed before it could.
            recorded = self._recorded and writes > 1
            if recorded:
                self._settle(required=True)
                # An episode under one of this call's record ids (stored by another program)
                # would be overwritten by the record, then deleted with it.
                held = pending.taken(self.engine, self.collection, writes)
                if held:
                    raise ValidationError(
                        f"this call needs {writes} writes, and episode {held[0]!r} holds the id "
                        "of one of their records: write it in fewer, larger batches (batch_size)"
                    )
            write_id = str(uuid.uuid4())
            ids: list[str] = []
            # A failed write may have been applied all the same: a server's answer can time
            # out, or its connection drop, after it wrote. Its point ids are chosen here,
            # before it is sent, so it is taken back with the earlier writes (deleting ids
            # that were never written changes nothing, and what they replaced is restored).
            # An embedded engine's failed write is never applied, so there a call of one
            # write is left as it is.
            sent: list[str] = []
            undoable = writes > 1 or not self._recorded
            # What the call replaced, to restore if it fails. A recorded call's records hold it
            # on disk (taking back reads them), so only an unrecorded one keeps it here.
            kept: dict[str, Hit] = {}
            mine: set[str] = set()  # ids this call wrote: not "replaced" by its later batches
            now = time.time()
            embedded = 0
            try:
                n = 0
                for episodes, vectors in batches(self):
                    if n >= writes:
                        raise EngineError(f"{call} made more than the {writes} writes it counted")
                    if vectors is None:
                        packed = self._packed(episodes)
                        embedded += len(episodes)
                        if on_progress is not None:
                            on_progress(embedded)
                    else:
                        packed = vectors
                    replaced = self._claimed(episodes, read=undoable, skip=mine, offset=len(ids))
                    points = [
                        self._point(ep, vec, now) for ep, vec in zip(episodes, packed, strict=True)
                    ]
                    written = [p.id for p in points]
                    if recorded:
                        points.append(pending.record(write_id, n, writes, now, points, replaced))
                    if undoable:
                        sent.extend(written)
                        if not recorded:
                            kept.update(replaced)
                    self.engine.upsert(self.collection, points)
                    ids.extend(written)
                    mine.update(written)
                    n += 1
                self._confirm_written(call)
                if recorded:
                    pending.clear(self.engine, self.collection, writes)
            except BaseException as exc:
                if sent:
                    self._take_back(
                        sent,
                        kept,
                        exc,
                        records=writes if recorded else 0,
                        written=len(ids),
                        call=call,
                    )
                raise
        return ids

    def _claimed(
        self,
        episodes: Sequence[ConversationEpisode],
        *,
        read: bool,
        skip: set[str],
        offset: int,
    ) -> dict[str, Hit]:
        """Check a batch's explicit ids before it is written; return what it replaces.

        What it replaces is read (`read`) where the call can be taken back; ids in `skip` were
        written by the call itself, so they replace nothing of before. `offset` is the batch's
        first episode's position in the call, for the error.
        """
        if not any(ep.point_id is not None for ep in episodes):
            return {}
        # What episodes with explicit ids would replace, to restore if the call fails: for a
        # call of several writes, and on a server for any call (it can apply a write and still
        # fail it). An embedded engine's failed write is never applied. Read once, for the
        # owner check too.
        replaced = self._stored(episodes) if read else {}
        # Checking owners and writing must not interleave with another writer claiming the
        # same id for someone else. (Checked here only: every write of the recorder has an
        # explicit id, so a check before embedding would read the engine twice per turn to
        # fail faster in a rare case.)
        foreign = self.foreign_ids(
            episodes,
            stored_payloads={i: h.payload for i, h in replaced.items()} if read else None,
        )
        for i, ep in enumerate(episodes):
            if ep.point_id is not None and pending.reserved(ep.point_id):
                foreign.setdefault(
                    i,
                    f"point_id {ep.point_id!r} is reserved for the store's own records "
                    "of unfinished writes; omit point_id to store a new episode",
                )
        if foreign:
            position, why = min(foreign.items())
            raise ValidationError(f"episode {offset + position}: {why}")
        return {i: h for i, h in replaced.items() if i not in skip}

    def _reindexed_elsewhere(self) -> str | None:
        """On a server, why another process's re-index may undo this store's last change.

        One request (`QdrantClientEngine.reindexing`); None on an engine whose re-index holds
        this store's lock, and when nothing moves.
        """
        if self._moves is None or self._generation is None:
            return None
        return self._moves(self.collection, self._generation)

    def _confirm_written(self, call: str) -> None:
        """On a server, raise if another process's re-index may lose the writes just made.

        A re-index marks the collection before its last catch-up (`mark_reindexing`): a write
        that finds no mark afterwards was made before it and is copied; one that finds it may
        have landed after the catch-up read the collection (deleted with it at the switch), or
        after the switch, through the name, with vectors of this store's models among the new
        ones. The caller takes such a write back. One request per call.
        """
        why = self._reindexed_elsewhere()
        if why is not None:
            raise EmbedderMismatchError(
                f"{call} was taken back: {why} (another process re-indexes the episode "
                f"collection {self.collection!r}), and a write made meanwhile could be lost or "
                "keep vectors of this memory's models; nothing of this call is stored. Open the "
                "store again with the re-index's embedder once it has finished (if none is "
                "running, one was stopped midway: run it again to finish it)"
            )

    def _stored(self, episodes: Sequence[ConversationEpisode]) -> dict[str, Hit]:
        """The stored points that episodes with explicit ids would replace."""
        wanted = [ep.point_id for ep in episodes if ep.point_id is not None]
        return stored_points(self.engine, self.collection, wanted)

    def _take_back(
        self,
        ids: Sequence[str],
        replaced: Mapping[str, Hit],
        exc: BaseException,
        *,
        records: int = 0,
        written: int | None = None,
        call: str = "memorize_many",
    ) -> None:
        """Undo the writes of a failed call: delete its new points, restore the rest.

        `ids` are those of every write sent, the failed one's too; the first `written` (all if
        None) are those of writes that returned, the others may or may not be stored. `records`
        is how many records the call (`pending`) wrote with its writes: the call is then taken
        back from them (deleting them afterwards, so none are left for the next open to take
        back again), and `replaced` is not needed. `call` names the call (`memorize_many`,
        `import_`) the error reports.
        """
        unique = list(dict.fromkeys(ids))
        new = [i for i in unique if i not in replaced]
        old = [replaced[i] for i in unique if i in replaced]
        try:
            if records:
                # The call's records hold what it replaced (`replaced` is empty then): read
                # back from them, so a big call does not keep every replaced episode.
                left = pending.find(self.engine, self.collection)
                if left is not None:
                    pending.take_back(self.engine, self.collection, left, self.vectors)
                return
            for start in range(0, len(new), 1024):
                chunk = tuple(new[start : start + 1024])
                delete_checked(self.engine, self.collection, Filter(must=(HasId(chunk),)))
            # A replaced episode gets its stored payload back, with vectors made again from
            # its stored texts by this store's models (what a re-index does).
            pending.restore(self.engine, self.collection, old, self.vectors)
        except Exception as undo:
            stored = list(dict.fromkeys(ids[:written]))
            unsure = [i for i in unique if i not in set(stored)]
            later = " (until the store is opened again, which takes them back)" if records else ""
            told = f"{call} failed ({exc})"
            if stored:
                told += (
                    f" after writing {len(stored)} of its episodes, and taking them back failed "
                    f"too ({undo}); they are stored{later}: {_shown(stored)}."
                )
            else:
                told += f", and taking back its failed write failed too ({undo})."
            if unsure:
                told += (
                    f" The {len(unsure)} episodes of the write that failed may be stored"
                    f"{' as well' if stored else ''} (a server can apply a write and still fail "
                    f"to answer){later}: {_shown(unsure)}."
                )
            again = (
                "Importing again replaces them where the file's records carry these point_ids"
                if call == "import_"
                else f"Calling {call} again with the same point_ids replaces them"
            )
            raise EngineError(f"{told} {again}") from exc

    def foreign_ids(
        self,
        episodes: Sequence[ConversationEpisode],
        *,
        stored_payloads: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[int, str]:
        """Positions of episodes whose `point_id` belongs to another user or agent, and why.

        `stored_payloads`: the payloads of every one of their ids that is stored, when read
        already (see `foreign_claims`).
        """
        claims = [(i, ep) for i, ep in enumerate(episodes) if ep.point_id is not None]
        found = foreign_claims(
            self.engine,
            self.collection,
            [(ep.point_id or "", (ep.user_id, ep.agent_id)) for _, ep in claims],
            ("user_id", "agent_id"),
            id_field="point_id",
            stored_payloads=stored_payloads,
        )
        return {claims[j][0]: why for j, why in found.items()}

    # -- reading -------------------------------------------------------------------------

    def recall(
        self,
        *,
        user_id: str,
        agent_id: str,
        query: str,
        conversation_id: str | None = None,
        **options: Unpack[RecallOptions],
    ) -> RecallResult:
        """Recall episodes for a query.

        The short, long, BM25, SPLADE and SPLADE-short searches each take their `stage1_limit`
        best (and, when the query names a period, `dated`: the short search again within that
        period); the engine fuses them by weighted Reciprocal Rank Fusion, once among the
        current conversation's episodes and once among the others. `RecallOptions` documents
        each option and its default.

        Returns `{"same_conversation": [...], "previous_conversations": [...]}`, each best
        first. Each item has `point_id`, `score`, `short_summary_text`, `long_summary_text`,
        every stored field, and (unless `with_stream_ranks=False`) `streams`: for each stream
        that found it, its rank and score.
        """
        result = self._recall(
            user_id=user_id,
            agent_id=agent_id,
            query=query,
            conversation_id=conversation_id,
            **options,
        )
        if self.retired:
            # A re-index switched the collection while this ran: the query was embedded with
            # models the collection may no longer hold. The switch keeps the write lock until
            # it has set `successor`, the store embedding with the collection's models now.
            with self._write_lock:
                successor = self.successor
            if successor is not None:
                return successor.recall(
                    user_id=user_id,
                    agent_id=agent_id,
                    query=query,
                    conversation_id=conversation_id,
                    **options,
                )
        return result

    def _recall(
        self,
        *,
        user_id: str,
        agent_id: str,
        query: str,
        conversation_id: str | None,
        **options: Unpack[RecallOptions],
    ) -> RecallResult:
        check_recall_options(options)
        self._require_vectors()
        base = tenant_filter(user_id, agent_id)
        require_text("query", query)
        if conversation_id is not None:
            require_id("conversation_id", conversation_id)
        # The defaults live here and only here (RecallOptions repeats them in its docs).
        prev_limit = _int_option(options, "previous_conversation_limit", 10)
        same_limit = _int_option(options, "same_conversation_limit", 5)
        stage1 = _int_option(options, "stage1_limit", 100)
        k = _int_option(options, "rrf_k", DEFAULT_RRF_K)
        with_stream_ranks = options.get("with_stream_ranks", True)
        if not isinstance(with_stream_ranks, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            # A truthy "no" would turn the stream ranks on.
            raise ValidationError(
                f"with_stream_ranks must be True or False, got {with_stream_ranks!r}"
            )
        weights = self._weights(options)
        diversity = require_share(
            "conversation_diversity",
            options.get("conversation_diversity", DEFAULT_CONVERSATION_DIVERSITY),
        )
        result: RecallResult = {"same_conversation": [], "previous_conversations": []}
        sides: list[tuple[str, Filter, int]] = []
        seen = self._seen_window(options)
        if conversation_id is not None and same_limit > 0:
            same = base.and_(Match("conversation_id", conversation_id))
            if seen is not None:
                same = same.and_not(seen)
            sides.append(("same_conversation", same, same_limit))
        if prev_limit > 0:
            prev = (
                base.and_not(Match("conversation_id", conversation_id)) if conversation_id else base
            )
            sides.append(("previous_conversations", prev, prev_limit))
        if not sides:
            return result

        period, speakers = _query_filters(query, weights)
        streams = self._streams(query, weights, stage1, period, speakers)
        if not streams:
            return result  # a query of only stopwords with only the BM25 stream weighted
        requests = [
            Fused(
                streams=tuple(streams),
                weights=tuple(weights[s.label] for s in streams),
                k=k,
                filter=flt,
                limit=limit,
            )
            for _, flt, limit in sides
        ]
        for (name, _, _), found in zip(
            sides, self._readable_answers(requests, explained=with_stream_ranks), strict=True
        ):
            for hit, ranks in found:
                item = payload_to_item(hit.id, hit.payload, hit.score)
                if ranks is not None:
                    item["streams"] = {
                        s: {"rank": rank, "score": score} for s, (rank, score) in ranks.items()
                    }
                result[name].append(item)
        return _diversified(result, diversity)

    def _readable_answers(
        self, requests: list[Fused], *, explained: bool
    ) -> list[list[tuple[Hit, StreamRanks | None]]]:
        """Each request's hits that can be read back, up to its limit, with stream ranks if asked.

        The streams run alone too when `explained`, ids only, in the same batch: the rank each
        gave each hit. A stored episode that cannot be read back is left out (and reported): a
        request that lost some asks again for that many more, so one such episode costs a
        recall neither its other answers nor a place in the list.
        """
        answers: list[list[tuple[Hit, StreamRanks | None]]] = [[] for _ in requests]
        waiting = list(range(len(requests)))
        asked = {i: requests[i].limit for i in waiting}
        while waiting:
            batch = [dataclasses.replace(requests[i], limit=asked[i]) for i in waiting]
            if explained:
                got = self.engine.query_explained(self.collection, batch)
            else:
                got = [
                    [(h, None) for h in hits] for hits in self.engine.query(self.collection, batch)
                ]
            again: list[int] = []
            for i, found in zip(waiting, got, strict=True):
                kept = [(h, ranks) for h, ranks in found if readable(h.id, h.payload)]
                answers[i] = kept[: requests[i].limit]
                if len(kept) < requests[i].limit and len(found) >= asked[i]:
                    asked[i] += len(found) - len(kept)
                    again.append(i)
            waiting = again
        return answers

    def _weights(self, options: RecallOptions) -> dict[str, float]:
        weights = {
            name: require_weight(
                f"{name}_weight",
                options.get(f"{name}_weight", DEFAULT_WEIGHTS[name]),  # type: ignore[misc]
            )
            for name in STREAMS
        }
        # The one rule the adapters' `validate_recall_options(memory=...)` applies too.
        problem = weights_problem(options, self.streams)
        if problem is not None:
            raise ValidationError(problem)
        for name in STREAMS:
            if name not in self.streams:
                weights[name] = 0.0
        # The streams that join only when the query names a period or a speaker.
        extra = {"dated": DEFAULT_DATED_WEIGHT, **DEFAULT_SPEAKER_WEIGHTS}
        for name, default in extra.items():
            weights[name] = require_weight(
                f"{name}_weight",
                options.get(f"{name}_weight", default),  # type: ignore[misc]
            )
        return weights

    @staticmethod
    def _seen_window(options: RecallOptions) -> Range | Filter | None:
        """The episodes already in the model's context, by where they end (`seen_from`).

        With `seen_metadata`, only the episodes of that writer: another's at the same
        positions (another thread of the conversation) are not in the model's context.
        """
        wanted = options.get("seen_metadata")
        if wanted is not None:
            seen_metadata_problem(wanted, "", ValidationError)
        if "seen_from" not in options and "seen_until" not in options:
            if wanted is not None:
                raise ValidationError("seen_metadata needs seen_from or seen_until")
            return None
        start = _int_option(options, "seen_from", 0)
        until = options.get("seen_until")
        if until is not None:
            until = _int_option(options, "seen_until", 0)
            if until < start:
                raise ValidationError(f"seen_until ({until}) is before seen_from ({start})")
        window = Range("end_index", gte=start, lt=until)
        if not wanted:
            return window
        own = tuple(Match(f"metadata.{key}", value) for key, value in sorted(wanted.items()))
        return Filter(must=(window, *own))

    def _streams(
        self,
        query: str,
        weights: Mapping[str, float],
        stage1: int,
        period: Filter | None = None,
        speakers: Filter | None = None,
    ) -> list[Stream]:
        """The query's streams, with `dated`, `speaker` and `speaker_bm25` when they apply.

        `dated` is the short dense search within `period`; `speaker` and `speaker_bm25` are the
        long dense and the BM25 searches among `speakers`' episodes. `period` is given only when
        the query names one and `dated_weight` is above 0; `speakers` when the query has a word
        and a speaker weight is above 0 (a speaker stream of weight 0 is left out).
        """
        labels, dense_vec, sparse, learned = self._encoded(query, weights, period, speakers)
        dense = [] if dense_vec is None else dense_vec.tolist()
        streams: list[Stream] = []
        for label in labels:
            if label in ("short", "long"):
                streams.append(Stream(label, dense, stage1))
            elif label == "dated":
                streams.append(Stream("short", dense, stage1, name="dated", filter=period))
            elif label == "speaker":
                streams.append(Stream("long", dense, stage1, name="speaker", filter=speakers))
            elif label == "bm25" and sparse is not None:
                streams.append(Stream("bm25", sparse, stage1))
            elif label == "speaker_bm25" and sparse is not None:
                streams.append(Stream("bm25", sparse, stage1, name="speaker_bm25", filter=speakers))
            elif learned is not None:
                # One query vector serves both learned streams.
                streams.append(Stream(label, learned, stage1))
        return streams

    def _encoded(
        self,
        query: str,
        weights: Mapping[str, float],
        period: Filter | None,
        speakers: Filter | None,
        *,
        dense: bool = True,
    ) -> tuple[list[str], npt.NDArray[np.float32] | None, SparseVec | None, SparseVec | None]:
        """The labels of the streams the query runs (`_stream_labels`), and its query vectors.

        Only the encoders a stream could use are run (the dense one not at all unless
        `dense`); a sparse stream whose query vector has no index is left out.
        """
        could = _stream_labels(
            weights,
            period=period is not None,
            speakers=speakers is not None,
            bm25_terms=True,
            learned_terms=self.splade is not None,
        )
        want_dense = dense and any(label in _DENSE_LABELS for label in could)
        want_bm25 = "bm25" in could or "speaker_bm25" in could
        want_learned = any(label in LEARNED for label in could)
        splade = self.splade
        if want_dense and want_learned and splade is not None:
            # Both encoders release the GIL: the SPLADE one runs on a helper thread meanwhile.
            dense_vec, learned = both(
                lambda: embed_query(self.embedder, query), lambda: splade.query(query)
            )
        else:
            dense_vec = embed_query(self.embedder, query) if want_dense else None
            learned = splade.query(query) if want_learned and splade is not None else None
        sparse = self.bm25.query(query) if want_bm25 else None
        labels = _stream_labels(
            weights,
            period=period is not None,
            speakers=speakers is not None,
            bm25_terms=sparse is not None and bool(sparse.indices),
            learned_terms=learned is not None and bool(learned.indices),
        )
        return labels, dense_vec, sparse, learned

    def score_ceiling(self, query: str, **options: Unpack[RecallOptions]) -> float:
        """The highest fused score `recall(query=query, **options)` can give an episode.

        That is the score of an episode ranked first by every stream the recall runs for this
        query (the sum of their weights over `rrf_k + 1`), so a recalled score divided by it
        is within 0 and 1, 1 meaning "first in every stream". 0.0 when the recall runs no
        stream (it then finds nothing). No search is made and no dense vector computed; the
        streams are chosen by `_stream_labels`, the rule the recall's `_streams` follows.
        Refused where `recall` is (a store holding other models' vectors).
        """
        check_recall_options(options)
        self._require_vectors()
        require_text("query", query)
        k = _int_option(options, "rrf_k", DEFAULT_RRF_K)
        weights = self._weights(options)
        period, speakers = _query_filters(query, weights)
        labels = self._encoded(query, weights, period, speakers, dense=False)[0]
        return sum(weights[name] for name in labels) / (k + 1)

    def count(self, *, user_id: str, agent_id: str, conversation_id: str | None = None) -> int:
        """Number of episodes of this user and agent (in one conversation if given)."""
        flt = tenant_filter(user_id, agent_id)
        if conversation_id is not None:
            flt = flt.and_(Match("conversation_id", require_id("conversation_id", conversation_id)))
        return self.engine.count(self.collection, flt)

    def get(self, point_id: str, *, user_id: str, agent_id: str) -> dict[str, Any]:
        """One episode by id; `NotFoundError` if this user and agent have no such episode."""
        flt = tenant_filter(user_id, agent_id)
        hit = self._find(point_id, flt)
        if hit is None:
            raise NotFoundError(
                f"no episode {point_id!r} for user {user_id!r} and agent {agent_id!r}"
            )
        problem = payload_problem(hit.payload)
        if problem is not None:
            # Asked for by id: leaving it out would say it is not there, and it is.
            raise EngineError(
                f"episode {hit.id!r} is stored but cannot be read back: {problem} (written by "
                "another program or an older release); export writes it as stored, "
                "forget(point_id=...) deletes it, memorize with its point_id replaces it"
            )
        return payload_to_item(hit.id, hit.payload)

    def _find(self, point_id: object, flt: Filter) -> Hit | None:

        if not isinstance(point_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"point_id must be a UUID string, got {point_id!r}")
        try:
            canonical = str(uuid.UUID(point_id))
        except ValueError:
            raise ValidationError(f"point_id must be a UUID string, got {point_id!r}") from None
        hits, _ = self.engine.scroll(self.collection, flt.and_(HasId((canonical,))), limit=1)
        # An engine may key points by a digest of the id: make sure it is this very id.
        return hits[0] if hits and hits[0].id == canonical else None

    def read_recent(
        self, n: int = 10, *, user_id: str, agent_id: str, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The `n` episodes that ended last, newest first."""
        flt = tenant_filter(user_id, agent_id)
        n = require_int("n", n)
        if conversation_id is not None:
            flt = flt.and_(Match("conversation_id", require_id("conversation_id", conversation_id)))
        if n == 0:
            return []

        def newest(limit: int) -> list[Hit]:
            return self.engine.scroll(self.collection, flt, limit=limit, order_by="timestamp_end")[
                0
            ]

        def keep(hit: Hit) -> dict[str, Any] | None:
            return payload_to_item(hit.id, hit.payload) if readable(hit.id, hit.payload) else None

        return read_readable(n, newest, keep)

    def iter_episodes(
        self,
        *,
        user_id: str,
        agent_id: str,
        conversation_id: str | None = None,
        page: int = 512,
        from_index: int | None = None,
    ) -> Iterator[Hit]:
        """Every episode of this user and agent, in pages, in storage order.

        `from_index` keeps only those starting at that message position or later (the
        engine leaves the others out: a long conversation is not read to find its end).
        """
        flt = tenant_filter(user_id, agent_id)
        if conversation_id is not None:
            flt = flt.and_(Match("conversation_id", require_id("conversation_id", conversation_id)))
        if from_index is not None:
            flt = flt.and_(Range("start_index", gte=require_int("from_index", from_index)))
        offset: str | None = None
        while True:
            hits, offset = self.engine.scroll(self.collection, flt, limit=page, offset=offset)
            yield from hits
            if offset is None:
                return

    # -- forgetting ----------------------------------------------------------------------

    def forget(
        self,
        *,
        user_id: str,
        agent_id: str,
        point_id: str | None = None,
        conversation_id: str | None = None,
        everything: bool = False,
    ) -> int:
        """Delete one episode, one conversation, or everything of this user and agent.

        Exactly one of `point_id`, `conversation_id` or `everything=True`. Returns how many
        episodes were deleted (0 when there was nothing to delete).

        The copies a re-index killed or failed midway left in its staging collection are
        deleted too, first: they would stay on disk until a later re-index finished. When one
        cannot be reached, the error is raised before anything of the collection is deleted.
        So are the copies the records of a call killed between its writes keep of the episodes
        it replaced (`pending`), until that call is taken back.

        On a Qdrant server, a forget that finds another process's re-index copying the
        collection (or switched away from it) after deleting raises `EmbedderMismatchError`:
        the re-index may bring the episodes back, so forget again once it has finished.
        """
        flt = tenant_filter(user_id, agent_id)
        chosen = sum((point_id is not None, conversation_id is not None, everything is True))
        if chosen != 1:
            raise ValidationError(
                "forget needs exactly one of point_id=..., conversation_id=... or everything=True"
            )
        forgotten_id: str | None = None
        if point_id is not None:
            hit = self._find(point_id, flt)
            if hit is None:
                return 0
            forgotten_id = hit.id
            flt = flt.and_(HasId((hit.id,)))
        elif conversation_id is not None:
            conversation_id = require_id("conversation_id", conversation_id)
            flt = flt.and_(Match("conversation_id", conversation_id))
        with self._write_lock:
            if isinstance(self.engine, StagedEngine):
                # A staged copy deleted alone loses nothing: a resumed re-index copies again
                # what the collection still holds.
                self.engine.delete_staged(self.collection, flt)
            if self._recorded:
                # The copies a killed call's records keep of the episodes it replaced.
                pending.forget(
                    self.engine,
                    self.collection,
                    lambda pid, payload: (
                        payload.get("user_id") == user_id
                        and payload.get("agent_id") == agent_id
                        and (forgotten_id is None or pid == forgotten_id)
                        and (
                            conversation_id is None
                            or payload.get("conversation_id") == conversation_id
                        )
                    ),
                )
            forgotten = delete_counted(self.engine, self.collection, flt)
            self._confirm_forgotten(forgotten)
            return forgotten

    def _confirm_forgotten(self, forgotten: int) -> None:
        """On a server, raise if another process's re-index may bring back what was forgotten.

        A re-index marks the collection before its last catch-up (`mark_reindexing`): a delete
        that finds no mark afterwards was made before it, and the catch-up drops the copies.
        One that finds it may have landed after the catch-up copied the episodes, which the
        switch then serves again. One request per call, as for writes (`_confirm_written`).
        """
        why = self._reindexed_elsewhere() if forgotten else None
        if why is not None:
            raise EmbedderMismatchError(
                f"forget deleted {forgotten} episodes, but {why} (another process re-indexes "
                f"the episode collection {self.collection!r}), and the copy it switches to may "
                "still hold them. Once the re-index has finished, open the store with its "
                "embedder and forget again (if none is running, one was stopped midway: run it "
                "again to finish it, then forget again)"
            )

    # -- export, import and statistics: each in its own module ----------------------------

    export = transfer.export
    import_ = transfer.import_
    stats = stats_.stats


def _query_filters(query: str, weights: Mapping[str, float]) -> tuple[Filter | None, Filter | None]:
    """The period and the speakers filters of the query's streams, None where none applies.

    The period is looked for only when `dated_weight` is above 0, the speakers only when a
    speaker weight is; the speaker filter lists the query's word runs.
    """
    period = named_period(query) if weights["dated"] > 0 else None
    terms = query_speaker_terms(query) if weights["speaker"] or weights["speaker_bm25"] else []
    return (
        None if period is None else period_filter(period),
        Filter(must=(MatchAny(SPEAKER_KEYS, tuple(terms)),)) if terms else None,
    )


def _diversified(result: RecallResult, diversity: float) -> RecallResult:
    """`result` with its previous-conversations list ordered for `conversation_diversity`.

    Greedy: the next episode is the one whose fused score, times `1 - diversity` for each
    episode of its conversation already placed, is highest; that product becomes its score.
    A product only shrinks as episodes are placed, so the scores stay best first.
    """
    items = result["previous_conversations"]
    if diversity <= 0 or len(items) < 2:
        return result
    keep = 1.0 - diversity
    shown: dict[str, int] = {}
    left = list(items)
    ordered: list[dict[str, Any]] = []
    while left:
        best = max(
            range(len(left)),
            key=lambda i: left[i]["score"] * keep ** shown.get(left[i]["conversation_id"], 0),
        )
        item = left.pop(best)
        item["score"] *= keep ** shown.get(item["conversation_id"], 0)
        shown[item["conversation_id"]] = shown.get(item["conversation_id"], 0) + 1
        ordered.append(item)
    result["previous_conversations"] = ordered
    return result


def _shown(ids: Sequence[str]) -> str:
    """The first ids of a list, and how many more, for an error message."""
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
