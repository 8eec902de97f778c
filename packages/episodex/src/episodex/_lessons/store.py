"""Where step lessons live: one collection of an engine, confined to user, agent and session."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from episodex._common.errors import EngineError, ValidationError
from episodex._common.unreadable import report_unreadable
from episodex._common.validation import require_id
from episodex._embedders.base import Embedder, embed_documents
from episodex._engines.base import Engine
from episodex._engines.collection import (
    delete_counted,
    foreign_claims,
    might_apply_failed_writes,
    open_collection,
    stored_points,
    stored_vectors,
    tenant_filter,
    upsert_or_take_back,
)
from episodex._engines.locks import write_lock
from episodex._engines.plan import CollectionSpec, Filter, Hit, Match, Point
from episodex._lessons.model import LESSONS_SCHEMA_VERSION, StepMemory

__all__ = ["COLLECTION", "LessonStore", "lesson_scope"]

COLLECTION = "step_lessons"


def _stale(memory: StepMemory, model: str) -> bool:
    """Whether the step's state embedding must be made (again) by `model`."""
    if memory.internal_state_embedding is None:
        return True
    return memory.embedding_model is not None and memory.embedding_model != model


def lesson_scope(user_id: object, agent_id: object, session_id: object) -> Filter:
    """The filter every lesson operation starts from: this user, agent AND session."""
    return tenant_filter(user_id, agent_id).and_(
        Match("session_id", require_id("session_id", session_id))
    )


class LessonStore:
    """Step memories in one collection of an engine (synchronous, thread-safe)."""

    def __init__(self, engine: Engine, embedder: Embedder, collection: str) -> None:
        self.engine = engine
        self.embedder = embedder
        self.collection = collection
        spec = CollectionSpec(
            name=collection,
            dense={"state": embedder.dimension},
            tenant_key="user_id",
            keywords=("agent_id", "session_id", "run_id", "outcome", "step_id"),
            integers=("rep", "step_num"),
            floats=("created_at_ts",),
        )
        open_collection(
            engine,
            spec,
            embedder_id=embedder.model_id,
            kind="step_lessons",
            schema=LESSONS_SCHEMA_VERSION,
            where=f"the step-lesson collection {collection!r}",
            mismatch_advice=(
                "open the lessons with the embedder they were made with (`embedder=`); "
                "`episodex reindex` re-embeds conversation episodes only. To move them to "
                "another, read them with that one (`load_all_memories_for_session`) and give "
                "them to `store_memories` of lessons opened with the new one on another "
                "`collection=`, which re-embeds them"
            ),
        )
        # Shared with every other store on this storage and collection in this process.
        self._write_lock = write_lock(engine, collection)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [row.tolist() for row in embed_documents(self.embedder, list(texts))]

    def with_embeddings(self, memories: Sequence[StepMemory]) -> list[StepMemory]:
        """The memories with this store's state embeddings.

        A step without an embedding, or with one another model made (`embedding_model`: a step
        exported from a store with another embedder, then imported), is embedded here. An
        embedding no model claims (given by the caller, or from a file of the original design)
        is kept if its length fits.
        """
        model = self.embedder.model_id
        redo = [m for m in memories if _stale(m, model)]
        vectors = iter(self.embed([m.internal_state for m in redo]))
        out: list[StepMemory] = []
        for memory in memories:
            if _stale(memory, model):
                memory = memory.replace(
                    internal_state_embedding=next(vectors), embedding_model=model
                )
            elif len(memory.internal_state_embedding or ()) != self.embedder.dimension:
                raise ValidationError(
                    f"step {memory.step_id!r} has an internal_state_embedding of length "
                    f"{len(memory.internal_state_embedding or ())}, but this store's embedder "
                    f"makes {self.embedder.dimension}; clear it (None) to re-embed"
                )
            out.append(memory)
        return out

    def write(self, memories: Sequence[StepMemory]) -> list[StepMemory]:
        _refuse_repeats(memories)
        embedded = self.with_embeddings(memories)
        with self._write_lock:
            # On a server, what the write replaces is read whole (in the owner check's one
            # read): a write it applies and then fails to answer for is taken back.
            before = (
                stored_points(self.engine, self.collection, [m.id for m in embedded])
                if might_apply_failed_writes(self.engine)
                else None
            )
            # A step id of another user, agent or session must never be overwritten (and moved).
            foreign = foreign_claims(
                self.engine,
                self.collection,
                [(m.id, (m.user_id, m.agent_id, m.session_id)) for m in embedded],
                ("user_id", "agent_id", "session_id"),
                stored_payloads=(
                    None if before is None else {i: h.payload for i, h in before.items()}
                ),
            )
            if foreign:
                position, why = min(foreign.items())
                raise ValidationError(f"memory {position}: {why}")
            return self._upsert(embedded, before)

    def _upsert(
        self, embedded: list[StepMemory], before: Mapping[str, Hit] | None
    ) -> list[StepMemory]:
        # A replaced step whose payload keeps no usable state vector (another program's, an
        # older release's) is written back by the vector it is stored with, read now.
        kept = {
            i: dense
            for i, (dense, _) in stored_vectors(
                self.engine,
                self.collection,
                [i for i, h in (before or {}).items() if self._usable_vector(h.payload) is None],
            ).items()
        }
        points: list[Point] = []
        for m in embedded:
            payload = m.model_dump(mode="json", exclude={"id"})
            payload["created_at_ts"] = m.created_at.timestamp()
            payload["schema"] = LESSONS_SCHEMA_VERSION
            # The state embedding is the point's vector and also kept in the payload, so a
            # loaded or exported step carries it and re-ranking needs no second round trip.
            points.append(
                Point(
                    id=m.id,
                    dense={"state": payload["internal_state_embedding"]},
                    sparse={},
                    payload=payload,
                )
            )
        upsert_or_take_back(
            self.engine,
            self.collection,
            points,
            before,
            lambda hits: self._restored(hits, kept),
            "store_memories",
        )
        return embedded

    def scan(
        self, flt: Filter, fields: bool | Sequence[str] = True
    ) -> list[tuple[str, dict[str, Any]]]:
        rows: list[tuple[str, dict[str, Any]]] = []
        offset: str | None = None
        while True:
            hits, offset = self.engine.scroll(
                self.collection, flt, limit=256, with_payload=fields, offset=offset
            )
            rows.extend((h.id, h.payload) for h in hits)
            if offset is None:
                return rows

    def load(self, flt: Filter) -> list[StepMemory]:
        """The stored steps `flt` finds that can be read back, in order (see `in_order`).

        A step that cannot be read back (written by another program or an older release) is
        left out and reported once: one such step must not cost a session its lessons.
        """
        return self._read(flt, every=False)

    def load_every(self, flt: Filter) -> list[StepMemory]:
        """Every stored step `flt` finds, in order; `EngineError` if one cannot be read back.

        For reads that promise every step (a session's export, a move to another embedder):
        leaving one out there would lose it without a word.
        """
        return self._read(flt, every=True)

    def _read(self, flt: Filter, *, every: bool) -> list[StepMemory]:
        memories: list[StepMemory] = []
        for pid, payload in self.scan(flt):
            try:
                memories.append(_from_payload(pid, payload))
            except ValidationError as exc:
                if every:
                    raise EngineError(
                        f"step memory {pid} is stored but cannot be read back: {_why(exc)} "
                        "(written by another program or an older release); store_memories with "
                        "its id and the step's fields replaces it, forget_session deletes the "
                        "session's steps"
                    ) from None
                report_unreadable("step memory", pid, _why(exc))
        return in_order(memories)

    def _restored(
        self, hits: Sequence[Hit], kept: Mapping[str, Mapping[str, list[float]]]
    ) -> list[Point]:
        """Stored steps as they were, payload and all, each with a vector this store takes.

        The state vector is the `internal_state_embedding` kept in the payload; a step without
        a usable one (none, not a vector of this store's length, or one another model made:
        written by another program or an older release) gets the vector it was stored with
        (`kept`, read before the write), and where the engine could not read it, its state
        text embedded, as a new write of it would be (a step without a readable state text
        its payload as JSON). Written back with an empty or short vector it was refused, so
        the take-back failed and the failed write stayed stored.
        """
        vectors: list[list[float] | None] = []
        for h in hits:
            vector = self._usable_vector(h.payload)
            vectors.append(
                vector if vector is not None else self._fitting(kept.get(h.id, {}).get("state"))
            )
        redo = [i for i, v in enumerate(vectors) if v is None]
        made = iter(self.embed([_state_text(hits[i].payload) for i in redo]))
        return [
            Point(
                id=h.id,
                dense={"state": v if v is not None else next(made)},
                sparse={},
                payload=dict(h.payload),
            )
            for h, v in zip(hits, vectors, strict=True)
        ]

    def _usable_vector(self, payload: Mapping[str, Any]) -> list[float] | None:
        vector = payload.get("internal_state_embedding")
        model = payload.get("embedding_model")
        if model is not None and model != self.embedder.model_id:
            return None
        if not isinstance(vector, list) or len(vector) != self.embedder.dimension:  # pyright: ignore[reportUnknownArgumentType]
            return None
        values: list[float] = []
        for x in vector:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
                return None
            values.append(float(x))
        return values

    def _fitting(self, vector: list[float] | None) -> list[float] | None:
        if vector is None or len(vector) != self.embedder.dimension:
            return None
        return vector if all(math.isfinite(x) for x in vector) else None

    def count(self, flt: Filter) -> int:
        return self.engine.count(self.collection, flt)

    def delete(self, flt: Filter) -> int:
        return delete_counted(self.engine, self.collection, flt)


def _state_text(payload: Mapping[str, Any]) -> str:
    """The text a restored step without a usable state vector is embedded from."""
    text = payload.get("internal_state")
    if isinstance(text, str) and text.strip():
        return text
    return json.dumps(payload, sort_keys=True, default=str)


def in_order(memories: list[StepMemory]) -> list[StepMemory]:
    """Steps sorted as a session's steps are read back."""
    # By rep, then run by run (two attempts started before either was stored share a rep:
    # by step number alone their steps interleaved), in the order the runs began; the point
    # id last, so steps equal in all of these do not come out in the engine's scan order.
    began: dict[str, datetime] = {}
    for m in memories:
        began[m.run_id] = min(began.get(m.run_id, m.created_at), m.created_at)
    memories.sort(key=lambda m: (m.rep, began[m.run_id], m.run_id, m.step_num, m.created_at, m.id))
    return memories


def stored_rep(point_id: str, payload: Mapping[str, Any]) -> int | None:
    """The rep a stored step's payload holds, or None (reported once) if it holds none."""
    rep = payload.get("rep")
    if isinstance(rep, int) and not isinstance(rep, bool) and rep >= 1:
        return rep
    report_unreadable("step memory", point_id, f"rep is no attempt number ({rep!r:.60})")
    return None


def _refuse_repeats(memories: Sequence[StepMemory]) -> None:
    """One id, and one copy of each step of a run, per write: a repeat would be a lost copy.

    The second of two memories with one id replaces the first; two memories of one step
    (one run, one `step_id`) are both stored, and a grade for that step id grades both.
    """
    ids: dict[str, int] = {}
    steps: dict[tuple[str, str, str, str, str], int] = {}
    for i, m in enumerate(memories):
        if (first := ids.setdefault(m.id, i)) != i:
            raise ValidationError(
                f"memory {i}: id {m.id!r} is memory {first}'s, earlier in the batch"
            )
        step = (m.user_id, m.agent_id, m.session_id, m.run_id, m.step_id)
        if (first := steps.setdefault(step, i)) != i:
            raise ValidationError(
                f"memory {i}: step_id {m.step_id!r} of run {m.run_id!r} is memory {first}'s, "
                "earlier in the batch; give each step of a run its own step_id"
            )


def _why(exc: ValidationError) -> str:
    return str(exc).removeprefix("stored step ").split(": ", 1)[-1]


def _from_payload(point_id: str, payload: Mapping[str, Any]) -> StepMemory:
    data = {k: v for k, v in payload.items() if k not in ("created_at_ts", "schema")}
    data["id"] = point_id
    return StepMemory.parse(data, where=f"stored step {point_id}: ")
