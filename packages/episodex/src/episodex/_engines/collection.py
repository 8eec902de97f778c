"""Helpers every collection owner shares: the tenant filter, the manifest check, id ownership."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from episodex._common.errors import (
    ConfigurationError,
    EmbedderMismatchError,
    EngineError,
    EpisodexError,
)
from episodex._common.validation import require_id
from episodex._common.vectors import SparseVec
from episodex._engines.base import Engine, check_collection_name
from episodex._engines.plan import CollectionSpec, Filter, HasId, Hit, Match, Point
from episodex._engines.sparse import Bm25Encoder

__all__ = [
    "TOMBSTONE",
    "check_manifest",
    "clear_tombstones",
    "collection_bm25",
    "delete_checked",
    "delete_counted",
    "foreign_claims",
    "might_apply_failed_writes",
    "open_collection",
    "payload_path",
    "stored_points",
    "stored_vectors",
    "tenant_filter",
    "tombstone",
    "upsert_or_take_back",
]

#: The payload key marking a tombstone: a point written over one to delete it (see `tombstone`).
TOMBSTONE = "deleted_point"
_TOMBSTONE_PAGE = 512

_log = logging.getLogger("episodex")

# A key Qdrant reads bare in a payload path: a plain word. Brackets are quoted: bare, `tags[]`
# and `tags[0]` would name the list `tags` and its elements, not the key itself.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# What no quoted key of a path may hold: Qdrant Edge's parser refuses a quote or a backslash.
_UNQUOTABLE = ('"', "\\")


def payload_path(*keys: str) -> str:
    """The engine's path to a nested payload field: `keys` joined by `.`, quoted unless bare.

    Qdrant reads `first name`, `user:id` or `$tag` as an invalid path (Qdrant Edge raises
    `ValueError`, qdrant-client an error the engine reports as an outage) and `"first name"`
    as that key itself; a bare word is left as it is, so every path already written still
    means what it meant. Raises `ValueError` for a key holding a quote or a backslash, which
    no path can quote (qdrant-client reads such a key, Qdrant Edge refuses the path).
    """
    parts: list[str] = []
    for key in keys:
        if any(ch in key for ch in _UNQUOTABLE):
            raise ValueError(
                f"key {key!r} holds a quote or a backslash, which no payload path can name"
            )
        parts.append(key if _BARE_KEY.fullmatch(key) else f'"{key}"')
    return ".".join(parts)


def tombstone(point_id: str, **hidden_by: str) -> Point:
    """A point that deletes `point_id` when written in the same upsert as the points it replaces.

    A write that puts some points and deletes others in two engine calls can stop between
    them, half applied; one upsert is all or nothing. A tombstone carries no vector and no
    tenant, so no tenant's filter, search or listing reaches it; `hidden_by` adds payload
    fields for a reader whose filter could otherwise match a point without them. Remove it
    afterwards with `clear_tombstones`.
    """
    return Point(id=point_id, dense={}, sparse={}, payload={**hidden_by, TOMBSTONE: True})


def clear_tombstones(engine: Engine, collection: str, ids: Sequence[str]) -> None:
    """Remove the tombstones at `ids`; a failure is logged, not raised.

    The write they belong to is applied already (they hide what it deleted), so one left
    behind costs a point no read returns, replaced when its id is written or deleted again.
    """
    try:
        for start in range(0, len(ids), _TOMBSTONE_PAGE):
            chunk = tuple(ids[start : start + _TOMBSTONE_PAGE])
            # The mark is in the filter too: only a tombstone is removed here, never a point
            # another writer has put at that id since.
            delete_checked(engine, collection, Filter(must=(HasId(chunk), Match(TOMBSTONE, True))))
    except EpisodexError as exc:
        _log.warning(
            "a write was applied, but removing %d tombstone point(s) from %r failed: %s",
            len(ids),
            collection,
            exc,
        )


def might_apply_failed_writes(engine: Engine) -> bool:
    """Whether a write `engine` failed may be stored all the same (a Qdrant server).

    A server can apply a write and then fail to answer for it (a timed-out answer, a dropped
    connection, a proxy's error after the write). An embedded engine's failed write is never
    applied, and there nothing is read to take it back.
    """
    return getattr(engine, "kind", None) not in ("edge", "memory")


def stored_points(engine: Engine, collection: str, ids: Sequence[str]) -> dict[str, Hit]:
    """The stored points at `ids`, whole payloads (one read per 1,024 ids)."""
    wanted = tuple(dict.fromkeys(ids))
    found: dict[str, Hit] = {}
    for start in range(0, len(wanted), 1024):
        chunk = wanted[start : start + 1024]
        hits, _ = engine.scroll(collection, Filter(must=(HasId(chunk),)), limit=len(chunk))
        found.update((h.id, h) for h in hits)
    return found


def stored_vectors(
    engine: Engine, collection: str, ids: Sequence[str]
) -> dict[str, tuple[dict[str, list[float]], dict[str, SparseVec]]]:
    """The dense and sparse vectors stored at `ids` where the engine can read them, else none.

    A point taken back after a failed write is written back with them where its payload does
    not keep them; an engine that cannot read vectors (one of another program's) leaves the
    caller to make them anew.
    """
    read = getattr(engine, "point_vectors", None)
    if read is None or not ids:
        return {}
    return read(collection, ids)


def upsert_or_take_back(
    engine: Engine,
    collection: str,
    points: Sequence[Point],
    before: Mapping[str, Hit] | None,
    rebuild: Callable[[Sequence[Hit]], list[Point]],
    what: str,
) -> None:
    """Write `points` in one upsert; if it fails, take it back where it may be stored.

    `before`: the points stored at the ids of `points` before the write (`stored_points`), or
    None where a failed write is never applied (`might_apply_failed_writes`). After a failure,
    the ids that held nothing are deleted and the rest written back as they were (`rebuild`
    makes their points, vectors and all, from the stored hits), so the call that raises leaves
    nothing of its write: a server that applied it and then failed to answer left it stored,
    new or replacing a record, while the caller was told it failed. `what` names the write in
    the error raised when taking it back fails too.
    """
    try:
        engine.upsert(collection, points)
    except BaseException as exc:
        if before is None:
            raise
        ids = list(dict.fromkeys(p.id for p in points))
        new = tuple(i for i in ids if i not in before)
        try:
            if new:
                delete_checked(engine, collection, Filter(must=(HasId(new),)))
            old = [before[i] for i in ids if i in before]
            if old:
                engine.upsert(collection, rebuild(old))
        except Exception as undo:
            raise EngineError(
                f"{what} failed ({exc}), and taking back the failed write failed too ({undo}): "
                "a server can apply a write and still fail to answer, so it may be stored. "
                "Write it again to replace it"
            ) from exc
        raise


def foreign_claims(
    engine: Engine,
    collection: str,
    claims: Sequence[tuple[str, tuple[str | None, ...]]],
    owner_keys: Sequence[str],
    *,
    id_field: str = "id",
    stored_payloads: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[int, str]:
    """Positions of `(point_id, owner)` claims whose id belongs to another owner, and why.

    Writing an existing id replaces that point, so an explicit id must never reach a point of
    another tenant, whether stored already or claimed earlier in the same batch. `owner` holds
    the values of `owner_keys` (e.g. user and agent) the writer will store; `id_field` names
    the id in messages. `stored_payloads`: the payloads of every claimed id that is stored,
    read already by the caller (an id missing from it is not stored); None reads them.
    """
    owners = " or ".join(k.removesuffix("_id") for k in owner_keys)
    first: dict[str, tuple[str | None, ...]] = {}
    foreign: dict[int, str] = {}
    for i, (point_id, owner) in enumerate(claims):
        if first.setdefault(point_id, owner) != owner:
            foreign[i] = f"{id_field} {point_id!r} is used by another {owners} earlier in the batch"
    ids = tuple(first)
    stored: dict[str, tuple[Any, ...]] = {}
    if stored_payloads is not None:
        stored.update((i, tuple(p.get(k) for k in owner_keys)) for i, p in stored_payloads.items())
        ids = ()
    for start in range(0, len(ids), 1024):
        chunk = ids[start : start + 1024]
        hits, _ = engine.scroll(
            collection,
            Filter(must=(HasId(chunk),)),
            limit=len(chunk),
            with_payload=tuple(owner_keys),
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


_ADVICE = "open it with the same embedder, or export and re-import into a new store to re-embed"

#: The streams of conversation-episode collections made before the manifest named them.
LEGACY_STREAMS = ["short", "long", "bm25"]


def check_manifest(
    stored: Mapping[str, Any], expected: Mapping[str, Any], where: str, advice: str = _ADVICE
) -> None:
    """Refuse a collection of another kind of records, or made with other models or streams.

    Compared: the kind of records; the dense embedder and its dimension; where `expected` names
    them, the retrieval streams (a manifest without them predates the learned sparse stream) and
    the sparse model.

    Raises:
        ConfigurationError: The collection holds another kind of records (a task store opened
            on the conversation episodes' collection, say): reading it would misparse them and
            writing would mix two kinds in one collection.
        EmbedderMismatchError: It was made with another embedder, dimension, stream set or
            sparse model.
    """
    if "kind" in stored and stored["kind"] != expected["kind"]:
        raise ConfigurationError(
            f"{where} holds {stored['kind']!r} records, not {expected['kind']!r}; give this "
            "memory or store another collection name"
        )
    checked: list[tuple[str, Any]] = [("embedder", None), ("dimension", None)]
    if "streams" in expected:
        checked += [("streams", LEGACY_STREAMS), ("sparse_model", None)]
    for key, legacy in checked:
        if key not in stored and legacy is None:
            continue  # nothing recorded to compare with
        have = stored.get(key, legacy)
        if have != expected[key]:
            raise EmbedderMismatchError(
                f"{where} was created with {key} {have!r} but this memory uses "
                f"{expected[key]!r}; {advice}"
            )


def open_collection(
    engine: Engine,
    spec: CollectionSpec,
    *,
    embedder_id: str,
    kind: str,
    schema: int,
    where: str,
    mismatch_advice: str = _ADVICE,
    **settings: Any,
) -> Mapping[str, Any]:
    """Create the collection if missing, recording its manifest, and check a stored one.

    The manifest names the embedder and its dimension (that of `spec`'s dense vectors), the
    kind of records and their schema version, plus `settings` (such as the BM25 parameters).
    A collection made with another embedder or dimension raises `EmbedderMismatchError`.

    Args:
        engine: The engine to open it in.
        spec: The collection's shape; its `metadata` is replaced by the manifest.
        embedder_id: The dense embedder's model id.
        kind: What the collection holds (`conversation_episodes`, `step_lessons`).
        schema: The version of the stored payload's shape.
        where: How messages name the collection ("the episode collection 'episodes'").
        mismatch_advice: What an `EmbedderMismatchError` tells the user to do.
        **settings: More manifest entries.

    Returns:
        The manifest stored with the collection.
    """
    check_collection_name(spec.name, embedded=engine.kind == "edge")
    manifest = {
        "embedder": embedder_id,
        "dimension": next(iter(spec.dense.values())),
        "kind": kind,
        "schema": schema,
        **settings,
    }
    stored = engine.ensure_collection(dataclasses.replace(spec, metadata=manifest))
    check_manifest(stored, manifest, where, mismatch_advice)
    return stored


def collection_bm25(
    stored: Mapping[str, Any],
    given: Bm25Encoder | None,
    where: str,
    advice: str = "",
) -> Bm25Encoder:
    """The BM25 encoder of a collection whose manifest is `stored`: its own settings.

    Stored BM25 vectors hold term weights computed with the settings the collection was made
    with (`k`, `b` and `avg_len` weigh each term of a stored text, the language picks its
    terms), so a store must write and query with those, or its vectors would score unlike the
    others in the same collection. `given` None (no `bm25=`) takes the recorded settings; a
    manifest without them (none was ever recorded) keeps `given` or the defaults.

    Raises:
        EmbedderMismatchError: `given` has other settings than the recorded ones, or the
            collection records a language this encoder cannot tokenize.
        ConfigurationError: The recorded settings are not valid BM25 settings.
    """
    recorded = stored.get("bm25")
    encoder = given if given is not None else Bm25Encoder()
    if not isinstance(recorded, Mapping):
        return encoder
    recorded = cast("Mapping[str, Any]", recorded)
    own = {key: recorded.get(key, value) for key, value in encoder.config.items()}
    if own == encoder.config:
        return encoder
    numbers = {key: own[key] for key in ("k", "b", "avg_len")}
    wanted = ", ".join(f"{key}={value!r}" for key, value in numbers.items())
    if given is None and own["language"] == encoder.config["language"]:
        try:
            return Bm25Encoder(**numbers)
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"{where} records BM25 settings that are not valid ({exc}); it cannot be opened"
            ) from None
    differing = ", ".join(
        f"{key} {own[key]!r} (this store: {value!r})"
        for key, value in encoder.config.items()
        if own[key] != value
    )
    fix = (
        f"open it with Bm25Encoder({wanted}), or without bm25= to use the collection's own"
        if own["language"] == encoder.config["language"]
        else f"a Bm25Encoder tokenizes only {encoder.config['language']!r}"
    )
    raise EmbedderMismatchError(
        f"{where} was made with BM25 settings {differing}: its stored term weights would mix "
        f"with others; {fix}{'; ' + advice if advice else ''}"
    )


def tenant_filter(user_id: object, agent_id: object) -> Filter:
    """The filter every operation starts from: this user AND this agent."""
    return Filter(
        must=(
            Match("user_id", require_id("user_id", user_id)),
            Match("agent_id", require_id("agent_id", agent_id)),
        )
    )


def delete_checked(engine: Engine, collection: str, flt: Filter) -> None:
    """Delete the points matching `flt`; a failed delete a server applied all the same returns.

    A server can apply a delete and then fail to answer for it (a timed-out answer, a dropped
    connection): the points are gone while the call raised. A delete is idempotent, so after
    a failure on a server the points are counted again: none left, the delete is done and
    nothing is raised. Otherwise the error is raised, with a note when the count failed too.
    """
    try:
        engine.delete(collection, flt)
    except EpisodexError as exc:
        if not might_apply_failed_writes(engine):
            raise
        try:
            left = engine.count(collection, flt)
        except Exception as check:
            exc.add_note(
                f"counting what is left failed too ({check}); a server can apply a delete and "
                "still fail to answer, so it may have been applied; deleting again is harmless"
            )
            raise exc from None
        if left:
            raise
        _log.warning("a delete's answer failed (%s), but the server applied it", exc)


def delete_counted(
    engine: Engine, collection: str, flt: Filter, *, page: int = 1024, server_chunk: int = 8192
) -> int:
    """Delete the points matching `flt` when the call starts; return how many were deleted.

    Counting and then deleting by filter would report a number taken before the delete, and a
    write landing in between would be deleted uncounted. So the matching ids are listed first
    and only those are deleted: a point written meanwhile survives (it came after the forget),
    and the number returned is the listed points no longer stored afterwards.

    The delete is one operation, so a failure deletes nothing: forgetting a conversation never
    stops halfway. Only a Qdrant server, whose requests have a size limit, gets the ids in
    chunks of `server_chunk`; a failure there leaves the earlier chunks deleted, and the
    error says to run the forget again.
    """
    ids: list[str] = []
    offset: str | None = None
    while True:
        hits, offset = engine.scroll(collection, flt, limit=page, with_payload=False, offset=offset)
        ids.extend(h.id for h in hits)
        if offset is None or not hits:
            break
    if not ids:
        return 0
    chunk = server_chunk if engine.kind == "server" else len(ids)
    remaining = 0
    for start in range(0, len(ids), chunk):
        part = flt.and_(HasId(tuple(ids[start : start + chunk])))
        try:
            delete_checked(engine, collection, part)
        except EpisodexError as exc:
            if start:
                exc.add_note(
                    f"{start} of the {len(ids)} points were deleted before this failure; run the "
                    "same forget again to delete the rest"
                )
            raise
        remaining += engine.count(collection, part)
    return len(ids) - remaining
