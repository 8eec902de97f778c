"""Helpers every collection owner shares: the tenant filter, the manifest check, id ownership."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from episodex._common.errors import EmbedderMismatchError
from episodex._common.validation import require_text
from episodex._engines.base import Engine
from episodex._engines.plan import CollectionSpec, Filter, HasId, Match

__all__ = ["check_manifest", "foreign_claims", "open_collection", "tenant_filter"]


def foreign_claims(
    engine: Engine,
    collection: str,
    claims: Sequence[tuple[str, tuple[str, ...]]],
    owner_keys: Sequence[str],
    *,
    id_field: str = "id",
) -> dict[int, str]:
    """Positions of `(point_id, owner)` claims whose id belongs to another owner, and why.

    Writing an existing id replaces that point, so an explicit id must never reach a point of
    another tenant, whether stored already or claimed earlier in the same batch. `owner` holds
    the values of `owner_keys` (e.g. user and agent) the writer will store; `id_field` names
    the id in messages.
    """
    owners = " or ".join(k.removesuffix("_id") for k in owner_keys)
    first: dict[str, tuple[str, ...]] = {}
    foreign: dict[int, str] = {}
    for i, (point_id, owner) in enumerate(claims):
        if first.setdefault(point_id, owner) != owner:
            foreign[i] = f"{id_field} {point_id!r} is used by another {owners} earlier in the batch"
    ids = tuple(first)
    stored: dict[str, tuple[Any, ...]] = {}
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


#: The streams of conversation-episode collections made before the manifest named them.
LEGACY_STREAMS = ["short", "long", "bm25"]


def check_manifest(stored: Mapping[str, Any], expected: Mapping[str, Any], where: str) -> None:
    """Raise `EmbedderMismatchError` if a store was made with other models or streams.

    Compared: the dense embedder and its dimension; where `expected` names them, the retrieval
    streams (a manifest without them predates the learned sparse stream) and the sparse model.
    """
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
                f"{expected[key]!r}: run `episodex reindex` (or `EpisodicMemory.reindex()`) to "
                "re-embed it with this memory's models (or export and re-import it into a new "
                "store), or open it with the models it was made with"
            )


def open_collection(
    engine: Engine,
    spec: CollectionSpec,
    *,
    embedder_id: str,
    kind: str,
    schema: int,
    where: str,
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
        **settings: More manifest entries.

    Returns:
        The manifest the collection was created with.
    """
    manifest = {
        "embedder": embedder_id,
        "dimension": next(iter(spec.dense.values())),
        "kind": kind,
        "schema": schema,
        **settings,
    }
    stored = engine.ensure_collection(dataclasses.replace(spec, metadata=manifest))
    check_manifest(stored, manifest, where)
    return stored


def tenant_filter(user_id: object, agent_id: object) -> Filter:
    """The filter every operation starts from: this user AND this agent."""
    return Filter(
        must=(
            Match("user_id", require_text("user_id", user_id)),
            Match("agent_id", require_text("agent_id", agent_id)),
        )
    )
