"""The synchronous core of conversation-episode memory; `EpisodicMemory` wraps it.

Every public method takes `user_id` and `agent_id` and builds its filter from them first: there
is no read, count, export or delete that can reach another tenant's points.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal, Unpack

from episodex._common.errors import ImportFileError, NotFoundError, ValidationError
from episodex._common.validation import require_int, require_text, require_weight
from episodex._embedders.base import Embedder
from episodex._engines.base import Engine
from episodex._engines.collection import check_manifest, foreign_claims, tenant_filter
from episodex._engines.plan import CollectionSpec, Filter, Fused, HasId, Hit, Match, Point, Stream
from episodex._engines.sparse import Bm25Encoder
from episodex._episodes.model import ConversationEpisode, payload_to_item
from episodex._episodes.options import RecallOptions, check_recall_options

__all__ = ["EpisodeStore", "ImportReport", "RecallResult", "check_manifest"]

COLLECTION = "episodes"
STREAMS = ("short", "long", "bm25")
RecallResult = dict[str, list[dict[str, Any]]]


@dataclass
class ImportReport:
    """What an import did.

    Attributes:
        imported: Point ids written, in file order.
        skipped: `(line_number, reason)` of each line left out (only with `errors="skip"`).
    """

    imported: list[str] = field(default_factory=list[str])
    skipped: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])


class EpisodeStore:
    """Conversation episodes in one collection of an engine (synchronous, thread-safe).

    Args:
        engine: The vector engine.
        embedder: The dense embedder; its id and dimension are recorded in the collection.
        bm25: The sparse encoder.
        collection: Collection name.
    """

    def __init__(
        self,
        engine: Engine,
        embedder: Embedder,
        *,
        bm25: Bm25Encoder | None = None,
        collection: str = COLLECTION,
    ) -> None:
        self.engine = engine
        self.embedder = embedder
        self.bm25 = bm25 or Bm25Encoder()
        self.collection = collection
        manifest = {
            "embedder": embedder.model_id,
            "dimension": embedder.dimension,
            "kind": "conversation_episodes",
            "schema": 1,
            "bm25": self.bm25.config,
        }
        spec = CollectionSpec(
            name=collection,
            dense={"short": embedder.dimension, "long": embedder.dimension},
            sparse=("bm25",),
            tenant_key="user_id",
            keywords=("agent_id", "conversation_id", "flows_activated", "tools_invoked"),
            floats=("timestamp_begin", "timestamp_end"),
            metadata=manifest,
        )
        stored = engine.ensure_collection(spec)
        check_manifest(stored, manifest, f"the episode collection {collection!r}")
        self._write_lock = threading.Lock()

    # -- writing -------------------------------------------------------------------------

    def _points(self, episodes: Sequence[ConversationEpisode]) -> list[Point]:
        texts: list[str] = []
        for ep in episodes:
            texts.extend((ep.short_summary, ep.long_summary))
        vectors = self.embedder.embed_documents(texts)
        now = time.time()
        points: list[Point] = []
        for i, ep in enumerate(episodes):
            payload = ep.to_payload(created_at=now)
            points.append(
                Point(
                    id=ep.point_id or str(uuid.uuid4()),
                    dense={"short": vectors[2 * i].tolist(), "long": vectors[2 * i + 1].tolist()},
                    sparse={"bm25": self.bm25.document(f"{ep.short_summary}\n{ep.long_summary}")},
                    payload=payload,
                )
            )
        return points

    def memorize_many(
        self,
        episodes: Iterable[ConversationEpisode | Mapping[str, Any]],
        *,
        batch_size: int = 256,
    ) -> list[str]:
        """Validate every episode, then embed and write them in batches; returns point ids.

        A bad episode raises `ValidationError` naming its position before anything is written.
        """
        batch_size = require_int("batch_size", batch_size, minimum=1)
        if isinstance(episodes, Mapping | str | bytes):
            raise ValidationError("memorize_many takes a list of episodes, not a single one")
        if not isinstance(episodes, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"memorize_many takes a list of episodes, got {type(episodes).__name__}"
            )
        parsed = [
            ConversationEpisode.parse(e, where=f"episode {i}: ") for i, e in enumerate(episodes)
        ]
        explicit = any(ep.point_id is not None for ep in parsed)
        ids: list[str] = []
        # With explicit ids, checking their owners and writing must not interleave with
        # another writer claiming the same id for someone else.
        with self._write_lock if explicit else contextlib.nullcontext():
            foreign = self._foreign_ids(parsed) if explicit else {}
            if foreign:
                position, why = min(foreign.items())
                raise ValidationError(f"episode {position}: {why}")
            for start in range(0, len(parsed), batch_size):
                points = self._points(parsed[start : start + batch_size])
                self.engine.upsert(self.collection, points)
                ids.extend(p.id for p in points)
        return ids

    def _foreign_ids(self, episodes: Sequence[ConversationEpisode]) -> dict[int, str]:
        """Positions of episodes whose `point_id` belongs to another user or agent, and why."""
        claims = [(i, ep) for i, ep in enumerate(episodes) if ep.point_id is not None]
        found = foreign_claims(
            self.engine,
            self.collection,
            [(ep.point_id or "", (ep.user_id, ep.agent_id)) for _, ep in claims],
            ("user_id", "agent_id"),
            id_field="point_id",
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

        The short, long and BM25 searches each take their `stage1_limit` best; the engine fuses
        them by weighted Reciprocal Rank Fusion, once among the current conversation's episodes
        and once among the others. `RecallOptions` documents each option and its default.

        Returns `{"same_conversation": [...], "previous_conversations": [...]}`, each best
        first. Each item has `point_id`, `score`, `short_summary_text`, `long_summary_text`,
        every stored field, and (unless `with_stream_ranks=False`) `streams`: for each stream
        that found it, its rank and score.
        """
        check_recall_options(options)
        base = tenant_filter(user_id, agent_id)
        if not isinstance(query, str) or not query.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"query must be a non-empty string, got {query!r}")
        if conversation_id is not None:
            require_text("conversation_id", conversation_id)
        # The defaults live here and only here (RecallOptions repeats them in its docs).
        prev_limit = require_int(
            "previous_conversation_limit", options.get("previous_conversation_limit", 10)
        )
        same_limit = require_int(
            "same_conversation_limit", options.get("same_conversation_limit", 5)
        )
        stage1 = require_int("stage1_limit", options.get("stage1_limit", 100), minimum=1)
        k = require_int("rrf_k", options.get("rrf_k", 10), minimum=1)
        with_stream_ranks = options.get("with_stream_ranks", True)
        weights = {
            "short": require_weight("short_weight", options.get("short_weight", 0.15)),
            "long": require_weight("long_weight", options.get("long_weight", 0.15)),
            "bm25": require_weight("bm25_weight", options.get("bm25_weight", 0.7)),
        }
        if not any(weights.values()):
            raise ValidationError(
                "short_weight, long_weight and bm25_weight are all 0: give at least one a weight > 0"
            )
        result: RecallResult = {"same_conversation": [], "previous_conversations": []}
        sides: list[tuple[str, Filter, int]] = []
        if conversation_id is not None and same_limit > 0:
            sides.append(
                (
                    "same_conversation",
                    base.and_(Match("conversation_id", conversation_id)),
                    same_limit,
                )
            )
        if prev_limit > 0:
            prev = (
                base.and_not(Match("conversation_id", conversation_id)) if conversation_id else base
            )
            sides.append(("previous_conversations", prev, prev_limit))
        if not sides:
            return result

        streams = self._streams(query, weights, stage1)
        if not streams:
            return result  # a query of only stopwords with only the BM25 stream weighted
        requests = [
            Fused(
                streams=tuple(streams),
                weights=tuple(weights[s.using] for s in streams),
                k=k,
                filter=flt,
                limit=limit,
            )
            for _, flt, limit in sides
        ]
        if not with_stream_ranks:
            for (name, _, _), hits in zip(
                sides, self.engine.query(self.collection, requests), strict=True
            ):
                result[name].extend(payload_to_item(h.id, h.payload, h.score) for h in hits)
            return result
        # The streams also run alone, ids only, in the same batch: the rank each gave each hit.
        answers = self.engine.query_explained(self.collection, requests)
        for (name, _, _), explained in zip(sides, answers, strict=True):
            for hit, ranks in explained:
                item = payload_to_item(hit.id, hit.payload, hit.score)
                item["streams"] = {
                    s: {"rank": rank, "score": score} for s, (rank, score) in ranks.items()
                }
                result[name].append(item)
        return result

    def _streams(self, query: str, weights: Mapping[str, float], stage1: int) -> list[Stream]:
        streams: list[Stream] = []
        if weights["short"] > 0 or weights["long"] > 0:
            dense = self.embedder.embed_query(query).tolist()
            streams.extend(
                Stream(name, dense, stage1) for name in ("short", "long") if weights[name] > 0
            )
        if weights["bm25"] > 0:
            sparse = self.bm25.query(query)
            if sparse.indices:
                streams.append(Stream("bm25", sparse, stage1))
        return streams

    def count(self, *, user_id: str, agent_id: str, conversation_id: str | None = None) -> int:
        """Number of episodes of this user and agent (in one conversation if given)."""
        flt = tenant_filter(user_id, agent_id)
        if conversation_id is not None:
            flt = flt.and_(
                Match("conversation_id", require_text("conversation_id", conversation_id))
            )
        return self.engine.count(self.collection, flt)

    def get(self, point_id: str, *, user_id: str, agent_id: str) -> dict[str, Any]:
        """One episode by id; `NotFoundError` if this user and agent have no such episode."""
        flt = tenant_filter(user_id, agent_id)
        hit = self._find(point_id, flt)
        if hit is None:
            raise NotFoundError(
                f"no episode {point_id!r} for user {user_id!r} and agent {agent_id!r}"
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
            flt = flt.and_(
                Match("conversation_id", require_text("conversation_id", conversation_id))
            )
        if n == 0:
            return []
        hits, _ = self.engine.scroll(self.collection, flt, limit=n, order_by="timestamp_end")
        return [payload_to_item(h.id, h.payload) for h in hits]

    def iter_episodes(
        self, *, user_id: str, agent_id: str, conversation_id: str | None = None, page: int = 512
    ) -> Iterator[Hit]:
        """Every episode of this user and agent, in pages, in storage order."""
        flt = tenant_filter(user_id, agent_id)
        if conversation_id is not None:
            flt = flt.and_(
                Match("conversation_id", require_text("conversation_id", conversation_id))
            )
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
        """
        flt = tenant_filter(user_id, agent_id)
        chosen = sum((point_id is not None, conversation_id is not None, everything is True))
        if chosen != 1:
            raise ValidationError(
                "forget needs exactly one of point_id=..., conversation_id=... or everything=True"
            )
        if point_id is not None:
            hit = self._find(point_id, flt)
            if hit is None:
                return 0
            flt = flt.and_(HasId((hit.id,)))
        elif conversation_id is not None:
            flt = flt.and_(
                Match("conversation_id", require_text("conversation_id", conversation_id))
            )
        with self._write_lock:
            n = self.engine.count(self.collection, flt)
            if n:
                self.engine.delete(self.collection, flt)
        return n

    # -- export and import ---------------------------------------------------------------

    def export(
        self,
        destination: str | Path | IO[str],
        *,
        user_id: str,
        agent_id: str,
        conversation_id: str | None = None,
    ) -> int:
        """Write this user's and agent's episodes as JSONL (one `memorize` record a line)."""
        hits = self.iter_episodes(
            user_id=user_id, agent_id=agent_id, conversation_id=conversation_id
        )
        if isinstance(destination, str | Path):
            path = Path(destination)
            tmp = path.with_name(f".{path.name}.tmp")
            try:
                with tmp.open("w", encoding="utf-8") as fh:
                    n = _write_jsonl(fh, hits)
                tmp.replace(path)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise ValidationError(
                    f"cannot write the export file {path}: {exc.strerror or exc}; give a path in "
                    "a folder that exists and is writable"
                ) from exc
            return n
        return _write_jsonl(destination, hits)

    def import_(
        self,
        source: str | Path | IO[str],
        *,
        errors: Literal["strict", "skip"] = "strict",
        user_id: str | None = None,
        agent_id: str | None = None,
        on_progress: Any = None,
    ) -> ImportReport:
        """Import a JSONL export.

        Args:
            source: A path or an open text file.
            errors: `strict` imports nothing if any line is bad and raises `ImportFileError`
                listing every bad line; `skip` imports the valid lines and reports the others.
            user_id: If given, every record must belong to this user.
            agent_id: If given, every record must belong to this agent.
            on_progress: Called with the number of episodes written after each batch.
        """
        if errors not in ("strict", "skip"):
            raise ValidationError(f"errors must be 'strict' or 'skip', got {errors!r}")
        # Records end at "\n" only: str.splitlines() would also cut at U+2028 or U+0085,
        # which json.dumps(ensure_ascii=False) leaves unescaped inside a summary.
        lines: list[str] | list[bytes]
        if isinstance(source, str | Path):
            try:
                lines = Path(source).read_bytes().split(b"\n")
            except OSError as exc:
                raise ValidationError(
                    f"cannot read the import file {source}: {exc.strerror or exc}; give the path "
                    "of a JSONL file written by export"
                ) from exc
        else:
            lines = source.read().split("\n")
        report = ImportReport()
        valid: list[ConversationEpisode] = []
        numbers: list[int] = []
        for number, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            except UnicodeDecodeError as exc:
                report.skipped.append(
                    (number, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
                )
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                report.skipped.append((number, f"not JSON: {exc}"))
                continue
            try:
                episode = ConversationEpisode.parse(record)
            except ValidationError as exc:
                report.skipped.append((number, str(exc)))
                continue
            if user_id is not None and episode.user_id != user_id:
                report.skipped.append(
                    (number, f"belongs to user {episode.user_id!r}, not {user_id!r}")
                )
                continue
            if agent_id is not None and episode.agent_id != agent_id:
                report.skipped.append(
                    (number, f"belongs to agent {episode.agent_id!r}, not {agent_id!r}")
                )
                continue
            valid.append(episode)
            numbers.append(number)
        # An id owned by another tenant is a bad line too, found before anything is written.
        foreign = self._foreign_ids(valid)
        if foreign:
            report.skipped.extend((numbers[i], why) for i, why in foreign.items())
            report.skipped.sort()
            valid = [ep for i, ep in enumerate(valid) if i not in foreign]
        if report.skipped and errors == "strict":
            shown = "; ".join(f"line {n}: {why}" for n, why in report.skipped[:5])
            more = f" (and {len(report.skipped) - 5} more)" if len(report.skipped) > 5 else ""
            raise ImportFileError(
                f"{len(report.skipped)} bad line(s), nothing imported: {shown}{more}; fix them or "
                "pass errors='skip' to import the valid lines",
                report.skipped,
            )
        for start in range(0, len(valid), 256):
            report.imported.extend(self.memorize_many(valid[start : start + 256]))
            if on_progress is not None:
                on_progress(len(report.imported))
        return report

    # -- statistics ----------------------------------------------------------------------

    def stats(self, *, user_id: str, agent_id: str, top: int = 5) -> dict[str, Any]:
        """What this user and agent have: episodes, conversations, dates, flows, tools, mood."""
        top = require_int("top", top, minimum=1)
        rows: list[Mapping[str, Any]] = []
        fields = (
            "conversation_id",
            "flows_activated",
            "tools_invoked",
            "timestamp_begin",
            "timestamp_end",
            "average_user_sentiment",
        )
        flt = tenant_filter(user_id, agent_id)
        offset: str | None = None
        while True:
            hits, offset = self.engine.scroll(
                self.collection, flt, limit=1024, with_payload=fields, offset=offset
            )
            rows.extend(h.payload for h in hits)
            if offset is None:
                break
        flows = Counter(f for r in rows for f in r.get("flows_activated") or [])
        tools = Counter(t for r in rows for t in r.get("tools_invoked") or [])
        rows.sort(key=lambda r: r["timestamp_end"])
        sentiments = [
            float(r["average_user_sentiment"])
            for r in rows
            if r.get("average_user_sentiment") is not None
        ]
        slope = _slope(sentiments)
        return {
            "user_id": user_id,
            "agent_id": agent_id,
            "episodes": len(rows),
            "conversations": len({r["conversation_id"] for r in rows}),
            "first_episode_at": datetime.fromtimestamp(rows[0]["timestamp_begin"], UTC)
            if rows
            else None,
            "last_episode_at": datetime.fromtimestamp(rows[-1]["timestamp_end"], UTC)
            if rows
            else None,
            "top_flows": flows.most_common(top),
            "top_tools": tools.most_common(top),
            "sentiment_mean": sum(sentiments) / len(sentiments) if sentiments else None,
            "sentiment_trend": slope,
            "sentiment_direction": _direction(slope),
        }


def _slope(values: Sequence[float]) -> float | None:
    """Least-squares slope of the values against their order (sentiment per episode)."""
    n = len(values)
    if n < 2:
        return None
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    num = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


def _direction(slope: float | None) -> str | None:
    if slope is None:
        return None
    if slope > 0.02:
        return "improving"
    if slope < -0.02:
        return "declining"
    return "stable"


def episode_record(hit: Hit) -> dict[str, Any]:
    """A stored episode as the JSON record `memorize` (and import) accepts."""
    p = hit.payload
    return {
        "point_id": hit.id,
        "user_id": p["user_id"],
        "agent_id": p["agent_id"],
        "conversation_id": p["conversation_id"],
        "short_summary": p["short_summary_text"],
        "long_summary": p["long_summary_text"],
        "start_index": p["start_index"],
        "end_index": p["end_index"],
        "overlap": p["overlap"],
        "flows_activated": p["flows_activated"],
        "tools_invoked": p["tools_invoked"],
        "timestamp_begin": datetime.fromtimestamp(p["timestamp_begin"], UTC).isoformat(),
        "timestamp_end": datetime.fromtimestamp(p["timestamp_end"], UTC).isoformat(),
        "average_user_sentiment": p["average_user_sentiment"],
        "user_sentiment_variance": p["user_sentiment_variance"],
        "metadata": p["metadata"],
    }


def _write_jsonl(fh: IO[str], hits: Iterable[Hit]) -> int:
    n = 0
    for hit in hits:
        fh.write(json.dumps(episode_record(hit), ensure_ascii=False) + "\n")
        n += 1
    return n
