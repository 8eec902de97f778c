"""Qdrant Edge backend: the Qdrant engine in process, one shard folder per collection."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import qdrant_edge as qe

from episodex._common.errors import (
    ConfigurationError,
    EngineError,
    StoreClosedError,
    StoreLockedError,
    ValidationError,
)
from episodex._common.files import atomic_write, remove_stale_temps
from episodex._common.lockfile import FolderLock
from episodex._engines.base import (
    FOLDER_MAP,
    STAGING_MARK,
    StreamRanks,
    answer_batch,
    bad_page_token,
    cap_count,
    check_collection_name,
    explain_fused,
    is_staging_copy,
    is_staging_name,
    ordered_page,
    refuse_bad_vectors,
    stream_searches,
)
from episodex._engines.plan import (
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
from episodex._engines.residency import read_ahead, release_pages
from episodex._engines.space import (
    DEFAULT_MIN_FREE_BYTES,
    FreeSpace,
    estimate_write_bytes,
    sparse_bytes,
    used_bytes,
)

__all__ = ["EdgeEngine", "store_exists"]


_MANIFEST = "episodex.json"
_QUANTIZED = "edge_int8_quantized"  # in the manifest: the collection was created quantized
# Which shard folder serves a collection, when it is not the folder of the collection's name:
# a re-index builds a new folder and switches to it by rewriting this one file atomically.
_FOLDERS = FOLDER_MAP
_WAL = "wal"  # Qdrant's write-ahead log folder inside a shard folder
_INT8_FILE = "quantized.data"  # Qdrant's file of a segment's int8 copies of one vector
# A staging copy a forget deletes whole is renamed to this prefix and its name first: a
# leading `.` names no collection (`check_collection_name`), so no lookup finds it meanwhile.
_DROPPED = ".dropped-"


def _read_folders(root: Path) -> dict[str, str]:
    path = root / _FOLDERS
    if not path.exists():
        return {}
    data = _read_manifest(path)
    return {str(k): str(v) for k, v in data.items()}


def store_exists(path: str | os.PathLike[str], collection: str) -> bool:
    """Whether `path` holds an embedded store with `collection`, looked up creating nothing."""
    root = Path(path)
    if not (root / _FOLDERS).is_file() and not root.is_dir():
        return False
    try:
        folder = _read_folders(root).get(collection, collection)
    except EngineError:
        return True  # a store with an unreadable file: opening it reports that properly
    return (root / folder / _MANIFEST).is_file()


# The binding returns a UUID point id as a new `uuid.UUID` (0.8 us each) and an integer id in a
# tenth of that, and a recall reads hundreds of ids (the stream ranks). So points are stored
# under a 64-bit integer key made from their UUID, and the UUID itself rides in the payload
# under `_ID_KEY`, removed again before a payload leaves this module.
#
# The key is a hash of all 128 bits. The first scheme took the UUID's low 64 bits, which
# `uuid1()` ids from one host share (clock sequence and node), so only the first such id was
# storable; collections made with it keep it (their manifest says so). A hash key of a new id
# that meets a stored one's is refused, and the refusal names no other id.
_ID_KEY = "_episodex_id"
_ID_SCHEME = "u64-hash-of-uuid"
_LOW_64 = (1 << 64) - 1

# What creating a collection takes on disk (measured: about 17 MiB for the episodes one, its
# first segment, payload indexes and write-ahead log), and what a delete may write.
_CREATE_BYTES = 24 * 1024 * 1024
_DELETE_BYTES = 1024 * 1024


def _uuid(point_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(point_id)
    except (ValueError, AttributeError, TypeError):
        raise ValidationError(f"a point id must be a UUID string, got {point_id!r}") from None


def _hash_key(point_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(_uuid(point_id).bytes, digest_size=8).digest(), "big")


def _low_key(point_id: str) -> int:
    return _uuid(point_id).int & _LOW_64


Keyer = Callable[[str], int]
_KEYERS: dict[str, Keyer] = {_ID_SCHEME: _hash_key, "u64-of-uuid": _low_key}


def _canonical(point_id: str) -> str:
    try:
        return str(uuid.UUID(point_id))
    except (ValueError, AttributeError, TypeError):
        raise ValidationError(f"a point id must be a UUID string, got {point_id!r}") from None


def _condition(cond: Condition, key: Keyer) -> Any:
    if isinstance(cond, Match):
        value = cond.value
        if isinstance(value, bool):
            # The binding reads a Python bool as the integer it also is (True -> 1), which
            # matches the number 1 and never a stored `true`; numpy's bool is no int, so it
            # stays a boolean, as qdrant-client renders it.
            value = np.bool_(value)
        return qe.FieldCondition(cond.key, match=qe.MatchValue(value))  # pyright: ignore[reportArgumentType]
    if isinstance(cond, MatchAny):
        return qe.FieldCondition(cond.key, match=qe.MatchAny(list(cond.values)))
    if isinstance(cond, MatchExcept):
        return qe.FieldCondition(cond.key, match=qe.MatchExcept(list(cond.values)))
    if isinstance(cond, Range):
        return qe.FieldCondition(
            cond.key, range=qe.RangeFloat(gte=cond.gte, gt=cond.gt, lte=cond.lte, lt=cond.lt)
        )
    if isinstance(cond, Filter):
        return render_filter(cond, key)
    return qe.HasIdCondition({key(i) for i in cond.ids})


def render_filter(flt: Filter, key: Keyer = _hash_key) -> qe.Filter:
    """Render a plan filter as a Qdrant Edge filter (`key`: the collection's id scheme)."""
    return qe.Filter(
        must=[_condition(c, key) for c in flt.must] or None,
        must_not=[_condition(c, key) for c in flt.must_not] or None,
    )


def _page_offset(offset: object) -> int | None:
    """A scroll token as the engine takes it: the decimal 64-bit point key it returned."""
    if offset is None:
        return None
    if isinstance(offset, str) and offset.isascii() and offset.isdigit() and int(offset) < 2**64:
        return int(offset)
    raise bad_page_token(offset, "a decimal number")


def _vector(vec: list[float] | SparseVec) -> Any:
    if isinstance(vec, SparseVec):
        return qe.SparseVector(vec.indices, vec.values)
    return vec


#: Rendered query vectors and filters of one batch, keyed by the id of the plan object they render:
#: a recall sends each stream's vector and each side's filter in several requests.
Memo = dict[Any, Any]


def _nearest(stream: Stream, memo: Memo) -> Any:
    # Two streams may search one vector in two named vectors (dense short and long).
    query = memo.get((id(stream.vector), stream.using))
    if query is None:
        query = memo[id(stream.vector), stream.using] = qe.Query.Nearest(
            _vector(stream.vector), using=stream.using
        )
    return query


def _filter(flt: Filter, key: Keyer, memo: Memo) -> qe.Filter:
    rendered = memo.get(id(flt))
    if rendered is None:
        rendered = memo[id(flt)] = render_filter(flt, key)
    return rendered


def _stream_filter(stream: Stream, flt: Filter, key: Keyer, memo: Memo) -> qe.Filter:
    """The request's filter with the stream's own conditions, rendered once per batch."""
    if stream.filter is None:
        return _filter(flt, key, memo)
    rendered = memo.get((id(flt), id(stream.filter)))
    if rendered is None:
        rendered = memo[id(flt), id(stream.filter)] = render_filter(stream.narrowed(flt), key)
    return rendered


def _prefetch(stream: Stream, flt: qe.Filter, memo: Memo) -> qe.Prefetch:
    return qe.Prefetch(limit=cap_count(stream.limit), query=_nearest(stream, memo), filter=flt)


def _ranked(stream: Stream, flt: qe.Filter, k: int, memo: Memo) -> qe.Prefetch:
    # Qdrant's RRF over a single list scores rank r (from 1) as 1 / (r + k' - 1): with
    # k' = k + 1 that is 1 / (k + r), which the fused request's formula then weights.
    return qe.Prefetch(
        limit=cap_count(stream.limit),
        prefetches=[_prefetch(stream, flt, memo)],
        query=qe.Fusion.Rrf(k=cap_count(k + 1)),  # pyright: ignore[reportArgumentType]
    )


def _payload_selector(with_payload: bool | Sequence[str]) -> Any:
    # Whatever is asked for, the point's UUID comes along.
    if with_payload is True:
        return True
    fields = [] if with_payload is False else list(with_payload)
    return qe.PayloadSelector.Include([*fields, _ID_KEY])


def render_request(
    req: Search | Fused,
    *,
    native_ids: bool = False,
    key: Keyer = _hash_key,
    memo: Memo | None = None,
) -> qe.QueryRequest:
    """Render a plan search as a Qdrant Edge query request.

    With `native_ids`, an id-only search returns no payload at all: its hits are matched by
    their integer ids, never turned into `Hit`s. Requests of one batch may share a `memo`, so
    a vector or filter they share is rendered once.
    """
    memo = {} if memo is None else memo
    if isinstance(req, Search):
        plain = native_ids and req.with_payload is False
        return qe.QueryRequest(
            limit=cap_count(req.limit),
            query=_nearest(req.stream, memo),
            filter=_stream_filter(req.stream, req.filter, key, memo),
            with_payload=False if plain else _payload_selector(req.with_payload),
            score_threshold=req.score_threshold,
        )
    return qe.QueryRequest(
        limit=cap_count(req.limit),
        prefetches=[
            _ranked(s, _stream_filter(s, req.filter, key, memo), req.k, memo) for s in req.streams
        ],
        query=qe.Formula(
            qe.Expression.Sum(
                [
                    qe.Expression.Mult(
                        [qe.Expression.Constant(w), qe.Expression.Variable(f"$score[{i}]")]
                    )
                    for i, w in enumerate(req.weights)
                ]
            ),
            # A hit one stream did not find gets nothing from it.
            defaults={f"$score[{i}]": 0.0 for i in range(len(req.streams))},
        ),
        # No filter here: the formula scores only what the filtered searches found, and
        # checking the filter again on every candidate cost 0.3 ms a recall at 100k.
        with_payload=_payload_selector(req.with_payload),
    )


def _payload_indexes(spec: CollectionSpec, memory: qe.Memory | None) -> list[tuple[str, Any]]:
    """The payload indexes of a new collection: each key and its index parameters.

    With `memory` (a quantized store's `Memory.Cold`) the indexes of indexed segments are
    memory-mapped and read as filters touch them; held in memory they were about 13 MiB of a
    100k-episode store's resident set.
    """
    if memory is None:
        indexes: list[tuple[str, Any]] = [(k, qe.PayloadSchemaType.Keyword) for k in spec.keywords]
        indexes += [(k, qe.PayloadSchemaType.Float) for k in spec.floats]
        indexes += [(k, qe.PayloadSchemaType.Integer) for k in spec.integers]
    else:
        indexes = [(k, qe.KeywordIndexParams(memory=memory)) for k in spec.keywords]
        indexes += [(k, qe.FloatIndexParams(memory=memory)) for k in spec.floats]
        indexes += [
            (k, qe.IntegerIndexParams(lookup=True, range=True, memory=memory))
            for k in spec.integers
        ]
    if spec.tenant_key:
        indexes.insert(0, (spec.tenant_key, qe.KeywordIndexParams(is_tenant=True, memory=memory)))
    return indexes


def _hit(point: Any) -> Hit:
    payload = point.payload or {}
    return Hit(payload.pop(_ID_KEY, None) or str(point.id), point.score, payload)


def _native_id(point: Any) -> Any:
    return point.id


def _record(record: Any) -> Hit:
    payload = record.payload or {}
    return Hit(payload.pop(_ID_KEY, None) or str(record.id), 0.0, payload)


def _engine_error(exc: Exception, what: str) -> EngineError:
    text = str(exc)
    if "WouldBlock" in text or "lock" in text.lower():
        return StoreLockedError(
            f"{what}: the store folder is open in another process ({text}); {_ADVICE}"
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


_ADVICE = (
    "close that one first; for several processes, run a Qdrant server "
    "(docker run -p 6333:6333 qdrant/qdrant) and open it from each one with "
    'EpisodicMemory(url="http://localhost:6333")'
)


def _drop_replaced_folders(root: Path, folders: Mapping[str, str]) -> None:
    """Delete the folder a collection was served from before a re-index switched it away.

    A switch deletes that folder right after the atomic switch; a process killed in between
    left it on disk, a whole second copy of the collection that nothing would ever delete.
    Only a folder named after a collection that is now served from another folder, and that
    serves no collection itself, is one.
    """
    import shutil

    served = set(folders.values())
    for name, folder in folders.items():
        if folder != name and name not in served and (root / name).is_dir():
            shutil.rmtree(root / name, ignore_errors=True)


def _drop_dropped_copies(root: Path) -> None:
    """Finish deleting the staging copies a forget dropped whole and a kill cut short."""
    import shutil

    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if entry.name.startswith(_DROPPED) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)


def _remove_stale_temps(root: Path) -> None:
    """Delete the temp files of folder-map and manifest rewrites a killed process left.

    Called with the store's lock just taken and no other open of it in this process, so no
    rewrite of those files is in flight.
    """
    remove_stale_temps(root / _FOLDERS)
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if entry.is_dir(follow_symlinks=False):
                remove_stale_temps(Path(entry.path) / _MANIFEST)


class _OpenFolder:
    """One store folder open in this process, shared by every `EdgeEngine` handle on it.

    A notebook that runs `EpisodicMemory(path=...)` again without closing the first, or a task
    store and a lesson memory on one folder, get the same open shards instead of
    `StoreLockedError`; the folder closes when its last handle does. Another process still
    meets the folder lock.
    """

    _registry: ClassVar[dict[str, _OpenFolder]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, root: Path, key: str) -> None:
        self.root = root
        self.key = key
        # Before anything is created: a second process gets StoreLockedError, not a race.
        self.folder_lock = FolderLock(root, what="the store", advice=_ADVICE, other="process")
        try:
            self.folders = _read_folders(root)
        except BaseException:
            self.folder_lock.release()
            raise
        _drop_replaced_folders(root, self.folders)
        _drop_dropped_copies(root)
        _remove_stale_temps(root)
        self.shards: dict[str, qe.EdgeShard] = {}
        self.keys: dict[str, Keyer] = {}
        self.lock = threading.RLock()
        self.handles = 1
        self.pid = os.getpid()

    @classmethod
    def acquire(cls, root: Path) -> _OpenFolder:
        key = os.path.realpath(root)
        with cls._registry_lock:
            shared = cls._registry.get(key)
            if shared is not None and shared.pid != os.getpid():
                # A forked child must not use its parent's shards: it opens the folder itself
                # (and meets the lock its parent holds).
                shared = None
            if shared is not None:
                try:
                    shared.folder_lock.check()
                except StoreClosedError:
                    shared = None  # the folder was replaced: this is a new store
                else:
                    shared.handles += 1
                    return shared
            opened = cls(root, key)
            cls._registry[key] = opened
            return opened

    def release(self) -> None:
        # The last handle's teardown holds the registry lock to its end, so an open of this
        # folder in another thread waits for it and then opens the folder anew. Taken out of
        # the registry before it was unlocked, the folder was locked again by such an open,
        # which got StoreLockedError ("open in another process") though there was none.
        with self._registry_lock:
            self.handles -= 1
            if self.handles > 0:
                return
            if self._registry.get(self.key) is self:
                del self._registry[self.key]
            failures = self._close_shards()
        if failures:
            raise EngineError(
                f"closing the store at {self.root} failed ({'; '.join(failures)}); what "
                "was acknowledged before is on disk unless the folder was deleted"
            )

    def _close_shards(self) -> list[str]:
        """Flush and close every shard, then unlock the folder; what failed, if anything."""
        with self.lock:
            failures: list[str] = []
            for name, shard in self.shards.items():
                try:
                    shard.flush()
                except Exception as exc:
                    failures.append(f"{name}: {exc}")
                finally:
                    try:
                        shard.close()
                    except Exception as exc:
                        failures.append(f"{name}: {exc}")
            self.shards.clear()
            self.folder_lock.release()
        return failures


class EdgeEngine:
    """Qdrant Edge in process, persistent in a folder: one sub-folder (shard) per collection.

    Each shard has its write-ahead log, HNSW indexes and payload indexes. A folder is open in
    one process at a time: another process gets `StoreLockedError`. Within a process, every
    `EdgeEngine` on one folder is a handle on the same open shards (closing one leaves the
    others working).

    The files are memory-mapped, and a full disk would kill the process (SIGBUS), so opening a
    collection, every write and `optimize` first check that `min_free_bytes` stay free on the
    store's disk, and raise `StorageFullError` otherwise, with the store intact.

    Args:
        path: The store folder; created if missing.
        min_free_bytes: Bytes kept free on the store's disk (default 128 MiB).
        quantize: Create collections with int8 dense vectors in memory and the originals on
            disk (`EngineOptions.quantize`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        min_free_bytes: int = DEFAULT_MIN_FREE_BYTES,
        quantize: bool = False,
    ) -> None:
        self._root = Path(path)
        self._quantize = quantize
        self._space = FreeSpace(self._root, min_free_bytes)  # checked before anything is made
        try:
            self._root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the store folder {self._root}: {exc}") from exc
        self._open = _OpenFolder.acquire(self._root)
        # The dicts, the lock and the folder lock are the shared open folder's own objects:
        # every handle of one folder sees the same shards.
        self._folder_lock = self._open.folder_lock
        self._shards = self._open.shards
        self._keys = self._open.keys
        self._lock = self._open.lock
        self._closed = False

    @property
    def kind(self) -> str:
        """`edge`."""
        return "edge"

    @property
    def storage_scope(self) -> object:
        """What every handle on this folder shares: stores on it share write locks (`locks.py`)."""
        return self._open

    @property
    def root(self) -> Path:
        """The store folder."""
        return self._root

    def _check_open(self) -> None:
        # Every call checks, `ensure_collection` included: on a closed handle it loaded the
        # shard again outside the released folder lock and kept it open for good.
        if self._closed:
            raise StoreClosedError("the store is closed; open it again")

    def _key(self, collection: str) -> Keyer:
        self._shard(collection)  # the same error for a closed store or an unknown collection
        return self._keys[collection]

    def _shard(self, collection: str) -> qe.EdgeShard:
        self._check_open()
        try:
            return self._shards[collection]
        except KeyError:
            raise EngineError(f"collection {collection!r} is not open") from None

    @staticmethod
    def _add_missing_indexes(
        shard: Any, spec: CollectionSpec, folder: Path, *, quantized: bool
    ) -> None:
        """Index the payload keys a newer release filters on that an older store lacks.

        Without its index a filter still works, by reading every candidate's payload.
        """
        try:
            have = set(shard.info().payload_schema)
            missing = [
                (key, params)
                for key, params in _payload_indexes(spec, qe.Memory.Cold if quantized else None)
                if key not in have
            ]
            for key, params in missing:
                shard.update(qe.UpdateOperation.create_field_index(key, params))
            if missing:
                shard.flush()
        except Exception as exc:
            raise _engine_error(exc, f"cannot index the payload of {folder}") from exc

    def ensure_collection(self, spec: CollectionSpec) -> Mapping[str, Any]:
        """Open the collection's shard, creating it and its payload indexes if missing."""
        check_collection_name(spec.name, embedded=True)  # its folder must be inside the store
        with self._lock:
            self._check_open()
            folder = self._root / self._open.folders.get(spec.name, spec.name)
            manifest = folder / _MANIFEST
            if spec.name in self._shards:
                # Open already (another handle on this folder): the same settings checks.
                shared = _read_manifest(manifest) if manifest.exists() else {}
                self._refuse_quantize(folder, shared)
                return shared
            # Loading or creating a shard in a folder that replaced the one opened would work
            # there without its lock (and a half-made one's clearing deletes).
            self._folder_lock.check()
            if manifest.exists():
                stored = _read_manifest(manifest)
                if stored.get("edge_point_ids") not in _KEYERS:
                    raise EngineError(
                        f"{folder} was made by a development version of episodex that stored "
                        "UUID point ids; export it with that version and import the file into a "
                        "new store"
                    )
                self._refuse_quantize(folder, stored)
                # Loading fills the memory-mapped files to their length and replays the log.
                self._space.require(sparse_bytes(folder), f"opening {folder}")
                # The load reads the log (and a quantized store's int8 copies) whole: have the
                # kernel read them ahead in large requests while it starts (residency.py).
                read_ahead(
                    folder,
                    names=(_INT8_FILE,) if stored.get(_QUANTIZED) else (),
                    subfolders=(_WAL,),
                )
                try:
                    shard = qe.EdgeShard.load(str(folder))
                except Exception as exc:
                    raise _engine_error(exc, f"cannot open {folder}") from exc
                # Opening read the whole log to replay it, and recalls never read it again
                # (residency.py). A quantized store keeps only its int8 copies resident: the
                # rest opening touched (the log, an empty segment's preallocated index pages)
                # is read again as searches and writes need it.
                if stored.get(_QUANTIZED):
                    release_pages(folder, keep=(_INT8_FILE,))
                else:
                    release_pages(folder / _WAL)
                try:
                    self._add_missing_indexes(
                        shard, spec, folder, quantized=bool(stored.get(_QUANTIZED))
                    )
                except BaseException:
                    # Not kept open: a retry in this process must be able to load it again.
                    with contextlib.suppress(Exception):
                        shard.close()
                    raise
                self._shards[spec.name] = shard
                self._keys[spec.name] = _KEYERS[stored["edge_point_ids"]]
                return stored
            # Quantized: everything but the int8 copies stays on disk, memory-mapped and read
            # as searches touch it (a tenant's graph, a query term's postings), so memory
            # tracks the tenants searched instead of the store's size.
            cold = qe.Memory.Cold if self._quantize else None
            config = qe.EdgeConfig(
                vectors={
                    name: qe.EdgeVectorParams(
                        size=dim,
                        distance=qe.Distance.Cosine,
                        # Quantized: the originals only serve the rescoring of the best
                        # candidates, so they stay on disk and out of memory.
                        memory=cold,
                    )
                    for name, dim in spec.dense.items()
                },
                quantization_config=(
                    qe.ScalarQuantizationConfig(
                        type=qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Cached
                    )
                    if self._quantize
                    else None
                ),
                sparse_vectors={
                    **{
                        name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=cold)
                        for name in spec.sparse
                    },
                    **{name: qe.EdgeSparseVectorParams(memory=cold) for name in spec.sparse_plain},
                },
                id_tracker_memory=cold,
                # Every search is filtered by tenant, so build per-tenant HNSW graphs instead of a
                # global one (Qdrant's multitenancy guidance: m=0, payload_m=16).
                hnsw_config=qe.HnswIndexConfig(
                    m=0 if spec.tenant_key else 16,
                    ef_construct=100,
                    full_scan_threshold=10_000,
                    payload_m=16 if spec.tenant_key else None,
                    memory=cold,
                ),
            )
            self._space.require(_CREATE_BYTES, f"creating {folder}")
            if (folder / "edge_config.json").exists():
                self._clear_half_made(folder)
            try:
                shard = qe.EdgeShard.create(str(folder), config)
                for key, params in _payload_indexes(spec, cold):
                    shard.update(qe.UpdateOperation.create_field_index(key, params))
                shard.flush()
            except Exception as exc:
                raise _engine_error(exc, f"cannot create {folder}") from exc
            # The manifest is written last and atomically: its presence means "fully created".
            stored = {**spec.metadata, "edge_point_ids": _ID_SCHEME}
            if self._quantize:
                stored[_QUANTIZED] = True
            with atomic_write(manifest) as fh:
                fh.write(json.dumps(stored, sort_keys=True))
            self._shards[spec.name] = shard
            self._keys[spec.name] = _KEYERS[_ID_SCHEME]
            return stored

    def _refuse_quantize(self, folder: Path, stored: Mapping[str, Any]) -> None:
        """Refuse `quantize=True` for a collection made without it (it keeps its setting)."""
        if self._quantize and not stored.get(_QUANTIZED):
            raise ConfigurationError(
                f"{folder} was created without quantize=True and keeps that setting; "
                "export it and import the file into a new store opened with quantize=True"
            )

    @staticmethod
    def _clear_half_made(folder: Path) -> None:
        """Delete the shard a crash left between creating it and writing its manifest.

        It was made for the opener of then, whose embedder dimension, streams or quantization
        may not be this one's, and reused it would be recorded under this one's manifest.
        Nothing is written to a collection before its manifest exists, so it holds no point:
        one that does was not left so by episodex, and is refused rather than deleted.
        """
        import shutil

        try:
            shard = qe.EdgeShard.load(str(folder))
            try:
                points = int(shard.count(qe.CountRequest(exact=True)))
            finally:
                shard.close()
        except Exception as exc:
            raise _engine_error(exc, f"cannot open {folder}") from exc
        if points:
            raise EngineError(
                f"{folder} holds {points} point(s) but no {_MANIFEST}, which records the embedder "
                "that made them: restore that file from a backup, or move the folder aside and "
                "re-import an export"
            )
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            raise EngineError(
                f"cannot create {folder}: removing its half-made shard: {exc}"
            ) from exc

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace points in one update operation."""
        if not points:
            return
        refuse_bad_vectors(points)
        key = self._key(collection)
        rendered = [
            qe.Point(
                key(p.id),
                {**p.dense, **{k: _vector(v) for k, v in p.sparse.items()}},
                {**p.payload, _ID_KEY: _canonical(p.id)},
            )
            for p in points
        ]
        needed = estimate_write_bytes(points)
        with self._lock:
            shard = self._shard(collection)
            self._folder_lock.check()
            self._space.require(needed, f"writing {len(points)} point(s)")
            self._refuse_key_collisions(shard, points, key)
            try:
                shard.update(qe.UpdateOperation.upsert_points(rendered))
            except Exception as exc:
                raise _engine_error(exc, "upsert failed") from exc

    @staticmethod
    def _refuse_key_collisions(shard: qe.EdgeShard, points: Sequence[Point], key: Keyer) -> None:
        # Two UUIDs with one key would share a point: refuse the second one rather than let it
        # replace the first (which may belong to another tenant), and name no stored id.
        wanted: dict[int, str] = {}
        for p in points:
            k, pid = key(p.id), _canonical(p.id)
            if wanted.setdefault(k, pid) != pid:
                raise ValidationError(
                    f"point ids {wanted[k]!r} and {pid!r} collide in the embedded engine; use another id"
                )
        try:
            records, _ = shard.scroll(
                qe.ScrollRequest(
                    limit=len(wanted),
                    filter=qe.Filter(must=[qe.HasIdCondition(set(wanted))]),
                    with_payload=qe.PayloadSelector.Include([_ID_KEY]),
                    with_vector=False,
                )
            )
        except Exception as exc:
            raise _engine_error(exc, "upsert failed") from exc
        for record in records:
            stored = (record.payload or {}).get(_ID_KEY)
            claimed = wanted.get(int(record.id))
            if stored is not None and stored != claimed:
                raise ValidationError(
                    f"point id {claimed!r} cannot be stored in the embedded engine (its 64-bit "
                    "key is taken); use another id"
                )

    def delete(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt`."""
        with self._lock:
            shard = self._shard(collection)
            self._folder_lock.check()
            self._space.require(_DELETE_BYTES, "deleting")
            try:
                shard.update(
                    qe.UpdateOperation.delete_points_by_filter(
                        render_filter(flt, self._key(collection))
                    )
                )
            except Exception as exc:
                raise _engine_error(exc, "delete failed") from exc

    def query(self, collection: str, requests: Sequence[Search | Fused]) -> list[list[Hit]]:
        """Run the requests as one batch."""
        refuse_bad_vectors(requests)
        key = self._key(collection)
        return answer_batch(
            requests, lambda asked: self._query(collection, key, asked), lambda hit: hit
        )

    def _query(
        self, collection: str, key: Keyer, requests: Sequence[Search | Fused]
    ) -> list[list[Hit]]:
        memo: Memo = {}
        rendered = [render_request(r, key=key, memo=memo) for r in requests]
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
        refuse_bad_vectors(requests)
        key = self._key(collection)
        return answer_batch(
            requests,
            lambda asked: self._explained(collection, key, asked),
            lambda explained: explained[0],
        )

    def _explained(
        self, collection: str, key: Keyer, requests: Sequence[Fused]
    ) -> list[list[tuple[Hit, StreamRanks]]]:
        memo: Memo = {}
        rendered = [render_request(r, key=key, memo=memo) for r in requests]
        rendered += [
            render_request(r, native_ids=True, key=key, memo=memo)
            for r in stream_searches(requests)
        ]
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
        page = _page_offset(offset)
        if order_by is not None:
            key = order_by

            def fetch(fields: bool | Sequence[str]) -> list[Hit]:
                order = qe.OrderBy(
                    key, direction=qe.Direction.Desc if descending else qe.Direction.Asc
                )
                return self._scroll(collection, flt, limit, fields, None, order)[0]

            page = ordered_page(
                self,
                collection,
                flt,
                fetch,
                key=key,
                limit=limit,
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
        offset: int | None,
        order: Any,
    ) -> tuple[list[Hit], str | None]:
        if limit <= 0:
            return [], None
        request = qe.ScrollRequest(
            offset=offset if order is None else None,
            limit=cap_count(limit),
            filter=render_filter(flt, self._key(collection)),
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
                return int(
                    shard.count(
                        qe.CountRequest(
                            exact=True, filter=render_filter(flt, self._key(collection))
                        )
                    )
                )
            except Exception as exc:
                raise _engine_error(exc, "count failed") from exc

    def generation(self, collection: str) -> str:
        """The shard folder that serves `collection` now (changes when a re-index switches)."""
        return self._open.folders.get(collection, collection)

    def drop_collection(self, collection: str) -> None:
        """Close and delete a collection that no other name serves (an abandoned staging one)."""
        import shutil

        check_collection_name(collection, embedded=True)
        with self._lock:
            self._check_open()
            folder = self.generation(collection)
            if folder in self._open.folders.values() and collection not in self._open.folders:
                raise EngineError(f"{folder} serves another collection; not dropped")
            # Checked before anything is closed or deleted: in a folder that replaced the one
            # opened, the folder of that name is another store's.
            self._folder_lock.check()
            shard = self._shards.pop(collection, None)
            self._keys.pop(collection, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self._root / folder, ignore_errors=True)

    def switch_collection(self, collection: str, staging: str) -> None:
        """Serve `collection` from the open collection `staging`, atomically; drop the old one.

        The switch is one atomic rename of the folder map: a crash before it leaves the old
        collection authoritative, a crash after it leaves the new one (and, at worst, the old
        folder on disk, deleted here right after the switch).
        """
        import shutil

        with self._lock:
            new = self._shard(staging)
            self._folder_lock.check()
            old_folder = self.generation(collection)
            new_folder = self.generation(staging)
            folders = {k: v for k, v in self._open.folders.items() if k != staging}
            folders[collection] = new_folder
            try:
                new.flush()
                with atomic_write(self._root / _FOLDERS) as fh:
                    fh.write(json.dumps(folders, sort_keys=True))
            except Exception as exc:
                raise _engine_error(exc, "switching to the re-indexed collection failed") from exc
            self._open.folders.clear()
            self._open.folders.update(folders)
            old = self._shards.pop(collection, None)
            self._shards[collection] = self._shards.pop(staging)
            self._keys[collection] = self._keys.pop(staging)
            if old is not None:
                try:
                    old.close()
                except Exception:  # the switch is done; the old shard is only garbage now
                    pass
            # The old folder, and any staging folder a killed or failed re-index of this
            # collection left: only one the re-index marked as its copy (or a half-made one,
            # with no manifest yet), never another collection merely named like one.
            stale = [old_folder] if old_folder != new_folder else []
            kind = self._manifest(self._root / new_folder).get("kind")
            for path in self._root.glob(f"{collection}{STAGING_MARK}*"):
                name = path.name
                if (
                    not path.is_dir()
                    or name in folders.values()
                    or not is_staging_name(name, collection)
                ):
                    continue
                if (path / _MANIFEST).is_file() and not is_staging_copy(
                    name, collection, self._manifest(path), kind
                ):
                    continue
                # A re-index that failed in this process left its staging collection open.
                abandoned = self._shards.pop(name, None)
                self._keys.pop(name, None)
                if abandoned is not None:
                    try:
                        abandoned.close()
                    except Exception:  # it is deleted next; nothing of it is kept
                        pass
                stale.append(name)
            for name in stale:
                if name not in folders.values():
                    shutil.rmtree(self._root / name, ignore_errors=True)

    def delete_staged(self, collection: str, flt: Filter) -> None:
        """Delete the points matching `flt` from the staging folders a re-index left.

        A re-index killed or failed midway leaves a full copy of the collection in its staging
        folder until a later one finishes: a forget must reach it too. The folders are those
        `switch_collection` would delete (never one that serves a collection); one not open is
        opened for the delete and closed again, or deleted whole where the disk has no room to
        open it (it holds nothing the collection lacks).
        """
        with self._lock:
            self._check_open()
            serving = set(self._open.folders.values())
            live = self.generation(collection)
            kind = self._manifest(self._root / live).get("kind")
            for path in sorted(self._root.glob(f"{collection}{STAGING_MARK}*")):
                name = path.name
                if (
                    not path.is_dir()
                    or name in serving
                    or name == live
                    or not is_staging_name(name, collection)
                ):
                    continue
                manifest = path / _MANIFEST
                if not manifest.is_file():
                    continue  # half-made: nothing is written before the manifest
                if not is_staging_copy(name, collection, _read_manifest(manifest), kind):
                    continue  # another collection named like a copy, not one of this one
                if name in self._shards:
                    self.delete(name, flt)
                else:
                    self._delete_in_folder(path, flt)

    def _delete_in_folder(self, folder: Path, flt: Filter) -> None:
        stored = _read_manifest(folder / _MANIFEST)
        key = _KEYERS.get(str(stored.get("edge_point_ids")))
        if key is None:
            raise EngineError(f"{folder} stores point ids this version cannot read")
        self._folder_lock.check()
        if not self._space.fits(sparse_bytes(folder) + _DELETE_BYTES):
            # Loading the copy fills its files (far more than the delete needs): on a disk
            # without that room every forget was refused, for a copy holding nothing the
            # collection lacks. Deleted whole instead; a later re-index copies it again.
            self._drop_copy(folder)
            return
        try:
            shard = qe.EdgeShard.load(str(folder))
        except Exception as exc:
            raise _engine_error(exc, f"cannot open {folder}") from exc
        try:
            shard.update(qe.UpdateOperation.delete_points_by_filter(render_filter(flt, key)))
            shard.flush()
        except Exception as exc:
            raise _engine_error(exc, f"delete in {folder} failed") from exc
        finally:
            with contextlib.suppress(Exception):
                shard.close()

    def _drop_copy(self, folder: Path) -> None:
        """Delete the staging copy in `folder` whole, first moving it out of every lookup.

        Renamed in one step to a name no collection can take (a leading `.`), so a delete cut
        short leaves no half copy a forget or a resumed re-index would find and fail to open;
        what a killed one leaves is deleted when the store is opened (`_drop_dropped_copies`).
        """
        import shutil

        gone = folder.with_name(f"{_DROPPED}{folder.name}")
        shutil.rmtree(gone, ignore_errors=True)  # an earlier drop of this name cut short
        try:
            folder.rename(gone)
            shutil.rmtree(gone)
        except OSError as exc:
            raise EngineError(
                f"deleting the staging copy {folder} a stopped re-index left failed ({exc}); "
                "nothing of the collection was deleted"
            ) from exc

    @staticmethod
    def _manifest(folder: Path) -> dict[str, Any]:
        """A collection folder's manifest; empty if it has none or it cannot be read.

        Unreadable, it is not known to be a staging copy, so it is not deleted.
        """
        manifest = folder / _MANIFEST
        if not manifest.is_file():
            return {}
        try:
            return _read_manifest(manifest)
        except EngineError:
            return {}

    def optimize(self) -> None:
        """Run Qdrant's segment optimizers (HNSW build, merges) on every open shard."""
        with self._lock:
            self._check_open()
            self._folder_lock.check()
            for name, shard in self._shards.items():
                # A merge rewrites segments: room for a new copy of the collection's data, in
                # the folder that serves it (a re-indexed one's is not named after it).
                folder = self._root / self.generation(name)
                self._space.require(used_bytes(folder), f"optimizing {name!r}")
                try:
                    shard.optimize()
                except Exception as exc:
                    raise _engine_error(exc, f"optimizing {name!r} failed") from exc

    def flush(self) -> None:
        """Flush every shard's segments to disk (the WAL already makes writes durable)."""
        with self._lock:
            self._check_open()
            for shard in self._shards.values():
                shard.flush()

    def close(self) -> None:
        """Let this handle go; the last handle of the folder flushes and closes every shard."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._open.release()
