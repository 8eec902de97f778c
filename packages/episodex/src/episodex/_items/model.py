"""What an item store reads and writes: references, writes and stored items, validated."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from episodex._common.errors import ValidationError
from episodex._common.unreadable import readable_time
from episodex._common.validation import json_object, require_id, storable_text

__all__ = [
    "MAX_NAMESPACE_DEPTH",
    "ItemPut",
    "ItemRef",
    "StoredItem",
    "check_namespace",
    "check_put",
    "check_ref",
    "item_payload",
    "item_problem",
    "point_id",
    "same_ref",
    "stored_item",
]

#: Most labels in a namespace; each is kept in its own payload key for prefix filters.
MAX_NAMESPACE_DEPTH = 16

# Fixed forever: point ids are derived from it, so changing it would orphan stored items.
_ID_NAMESPACE = uuid.UUID("6f1d4c8e-2b7a-5e43-9c1f-8a0d3e5b7c21")


@dataclass(frozen=True, slots=True)
class ItemRef:
    """Where an item lives: its tenant (user and agent), namespace and key.

    Attributes:
        user_id: The end user; every read and write is confined to one.
        agent_id: The agent.
        namespace: The item's path of labels, e.g. `("alice", "preferences")`.
        key: The item's key within the namespace.
    """

    user_id: str
    agent_id: str
    namespace: tuple[str, ...]
    key: str


@dataclass(frozen=True, slots=True)
class ItemPut:
    """An item to store (or replace): where it lives, its JSON value, the text to index.

    Attributes:
        ref: Where the item lives.
        value: The item, a JSON object.
        text: What is embedded (dense) and indexed (BM25) for search; None stores the item
            without vectors, so only filters and listing find it, never a query.
    """

    ref: ItemRef
    value: Mapping[str, Any]
    text: str | None = None


@dataclass(frozen=True, slots=True)
class StoredItem:
    """An item as stored.

    Attributes:
        namespace: The item's namespace.
        key: Its key.
        value: Its JSON value.
        created_at: When it was first stored (UTC).
        updated_at: When it was last written (UTC).
        score: The fused relevance score when found by a query, else None.
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


def check_namespace(
    namespace: object, where: str = "", *, allow_empty: bool = False
) -> tuple[str, ...]:
    """`namespace` must be a tuple (or list) of non-empty labels, at most `MAX_NAMESPACE_DEPTH`."""
    if not isinstance(namespace, tuple | list):
        raise ValidationError(
            f"{where}namespace must be a tuple of strings, got {type(namespace).__name__}"
        )
    labels: tuple[object, ...] = tuple(namespace)  # pyright: ignore[reportUnknownArgumentType]
    if not labels and not allow_empty:
        raise ValidationError(f"{where}namespace must have at least one label")
    if len(labels) > MAX_NAMESPACE_DEPTH:
        raise ValidationError(
            f"{where}namespace has {len(labels)} labels; at most {MAX_NAMESPACE_DEPTH} are kept"
        )
    out: list[str] = []
    for label in labels:
        if not isinstance(label, str) or not label:
            raise ValidationError(
                f"{where}namespace labels must be non-empty strings, got {label!r} in {labels!r}"
            )
        try:
            storable_text(label)
        except ValueError as exc:
            raise ValidationError(f"{where}namespace label: {exc}") from None
        out.append(label)
    return tuple(out)


def check_ref(ref: object, where: str = "") -> ItemRef:
    """A valid `ItemRef` (labels, key and tenant checked) or `ValidationError`."""
    if not isinstance(ref, ItemRef):
        raise ValidationError(f"{where}expected an ItemRef, got {type(ref).__name__}")
    # The one id rule of every tenant read: an item stored for an id that `search` or
    # `forget` refuses could never be found or forgotten by its owner.
    require_id(f"{where}user_id", ref.user_id)
    require_id(f"{where}agent_id", ref.agent_id)
    namespace = check_namespace(ref.namespace, where)
    if not isinstance(ref.key, str) or not ref.key:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError(f"{where}key must be a non-empty string, got {ref.key!r}")
    try:
        storable_text(ref.key)
        storable_text(ref.user_id)
        storable_text(ref.agent_id)
    except ValueError as exc:
        raise ValidationError(f"{where}{exc}") from None
    return ItemRef(ref.user_id, ref.agent_id, namespace, ref.key)


def check_put(put: object, where: str = "") -> ItemPut:
    """A valid `ItemPut`: its reference, a JSON object value, and text or None."""
    if not isinstance(put, ItemPut):
        raise ValidationError(f"{where}expected an ItemPut, got {type(put).__name__}")
    ref = check_ref(put.ref, where)
    if not isinstance(put.value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError(
            f"{where}value must be a JSON object (a dict), got {type(put.value).__name__}"
        )
    try:
        value = json_object(dict(put.value))
    except ValueError as exc:
        raise ValidationError(f"{where}value {exc}") from None
    text = put.text
    if text is not None:
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"{where}text must be a string or None, got {text!r}")
        try:
            storable_text(text)
        except ValueError as exc:
            raise ValidationError(f"{where}{exc}") from None
        if not text.strip():
            text = None  # nothing to embed: stored like an unindexed item
    return ItemPut(ref, value, text)


def point_id(ref: ItemRef) -> str:
    """The point id of an item: the same (tenant, namespace, key) always names the same point.

    The tenant is part of the name, so two users' items never share a point.
    """
    name = json.dumps([ref.user_id, ref.agent_id, list(ref.namespace), ref.key])
    return str(uuid.uuid5(_ID_NAMESPACE, name))


def item_payload(put: ItemPut, *, created_at: float, updated_at: float) -> dict[str, Any]:
    """The payload of an item's point: tenant, namespace (whole and per label), key, value."""
    ref = put.ref
    payload: dict[str, Any] = {
        "user_id": ref.user_id,
        "agent_id": ref.agent_id,
        "namespace": list(ref.namespace),
        "ns_depth": len(ref.namespace),
        "key": ref.key,
        "value": dict(put.value),
        "indexed": put.text is not None,
        "created_at": created_at,
        "updated_at": updated_at,
    }
    payload.update({f"ns{i}": label for i, label in enumerate(ref.namespace)})
    return payload


def item_problem(payload: Mapping[str, Any], fields: tuple[str, ...] | None = None) -> str | None:
    """Why a stored item cannot be read back (`"key is missing"`), or None.

    A point written by another program or an older release may lack a field or hold one of
    the wrong type; `write` never stores such a point. Only `fields` are looked at when given
    (a read that asked for those alone).
    """
    for field in (
        ("namespace", "key", "value", "created_at", "updated_at") if fields is None else fields
    ):
        if field not in payload:
            return f"{field} is missing"
        value = payload[field]
        shown = _shown(value)
        if field == "namespace":
            try:
                check_namespace(value)
            except ValidationError as exc:
                return f"namespace is no list of labels: {exc} ({shown})"
        elif field == "key" and (not isinstance(value, str) or not value):
            return f"key is no non-empty text ({shown})"
        elif field == "value" and not isinstance(value, dict):
            return f"value is no JSON object ({shown})"
        elif field in ("created_at", "updated_at") and readable_time(value) is None:
            return f"{field} is no time a datetime holds ({shown})"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def stored_item(payload: Mapping[str, Any], score: float | None = None) -> StoredItem:
    """The item a stored payload holds; the payload must be readable (`item_problem`)."""
    return StoredItem(
        namespace=tuple(payload["namespace"]),
        key=payload["key"],
        value=dict(payload["value"]),
        created_at=datetime.fromtimestamp(payload["created_at"], UTC),
        updated_at=datetime.fromtimestamp(payload["updated_at"], UTC),
        score=score,
    )


def same_ref(payload: Mapping[str, Any], ref: ItemRef) -> bool:
    """Whether a stored payload is this very item (an engine may key points by a digest)."""
    return (
        payload.get("user_id") == ref.user_id
        and payload.get("agent_id") == ref.agent_id
        and tuple(payload.get("namespace", ())) == ref.namespace
        and payload.get("key") == ref.key
    )
