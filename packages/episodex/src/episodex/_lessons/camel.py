"""Step memories in the original camelCase JSON schema, read into `StepMemory` fields.

The original design exported step memories with camelCase keys (`stepId`, `envPre`,
`createdAt`, ...), a numeric `id` and, sometimes, states stored as JSON text. `from_camel`
turns one such record into the snake_case mapping `StepMemory` validates; nothing is dropped:
the original id and any key this schema does not know go into `metadata`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from episodex._common.errors import ValidationError
from episodex._common.validation import read_json
from episodex._lessons.model import StepMemory

__all__ = ["from_camel", "is_camel_record"]

# camelCase key of the original schema -> our field.
_FIELDS: dict[str, str] = {
    "id": "id",
    "stepId": "step_id",
    "userId": "user_id",
    "agentId": "agent_id",
    "sessionId": "session_id",
    "runId": "run_id",
    "rep": "rep",
    "stepNum": "step_num",
    "envPre": "env_pre",
    "internalState": "internal_state",
    "think": "think",
    "internalStateEmbedding": "internal_state_embedding",
    "action": "action",
    "actionElementText": "action_element_text",
    "envPost": "env_post",
    "outcome": "outcome",
    "outcomeReason": "outcome_reason",
    "correction": "correction",
    "confidence": "confidence",
    "taskIncomplete": "task_incomplete",
    "createdAt": "created_at",
    "metadata": "metadata",
}
# Keys that exist only in the camelCase schema: any one of them marks a record as camelCase.
_CAMEL_ONLY = frozenset(k for k, v in _FIELDS.items() if k != v)
_IDS = ("step_id", "user_id", "agent_id", "session_id", "run_id")
# The uuid5 namespace of ids the original schema gave as numbers (or other non-UUID text).
_ID_NAMESPACE = uuid.UUID("6f2d4c1a-93b8-4e07-a1d5-0b7c2e9f8a31")
_ENV_KEYS = frozenset(("url", "page", "elements", "extra"))


def is_camel_record(record: object) -> bool:
    """Whether a JSON record uses the original camelCase schema (or a numeric `id`)."""
    if not isinstance(record, Mapping):
        return False
    keys = set(record)  # pyright: ignore[reportUnknownArgumentType]
    numeric_id = isinstance(record.get("id"), int) and not isinstance(record.get("id"), bool)  # pyright: ignore[reportUnknownMemberType]
    return bool(keys & _CAMEL_ONLY) or numeric_id


def _id_text(name: str, value: object) -> object:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _env(name: str, value: object) -> object:
    if isinstance(value, str):
        # The original kept states as JSON text in some exports.
        try:
            value = read_json(value)
        except json.JSONDecodeError:
            return {"url": value}
    if isinstance(value, Mapping):
        env: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if key in _ENV_KEYS:
                env[key] = item
            else:
                extra[str(key)] = item  # pyright: ignore[reportUnknownArgumentType]
        if extra:
            env["extra"] = {**extra, **(env.get("extra") or {})}
        return env
    return value


def _time(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Epoch seconds, or milliseconds (JavaScript's Date.now()) when too large for seconds.
        seconds = value / 1000 if abs(value) >= 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValidationError(f"createdAt {value!r} is not a time") from None
    return value


def _point_id(value: object, data: Mapping[str, Any], metadata: dict[str, Any]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value))
        except ValueError:
            pass
    elif not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"id must be a number or a string, got {value!r}")
    # Stored points are keyed by UUID: derive one, and keep the original id beside it. The
    # original numbered steps per database, so every user's (and run's) export has an id 1:
    # the UUID comes from the step's tenant and run too, or the second import of an id 1
    # would be refused as another user's, or replace another run's step.
    metadata.setdefault("original_id", value)
    owner = [data.get(name) for name in ("user_id", "agent_id", "session_id", "run_id")]
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps([*owner, str(value)], default=str)))


def from_camel(
    record: Mapping[str, Any],
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
) -> dict[str, Any]:
    """The `StepMemory` fields of one camelCase record.

    Args:
        record: The record as read from JSON.
        user_id: The user to file it under when the record names none.
        agent_id: The agent to file it under when the record names none.
    """
    data: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for key, value in record.items():
        field = _FIELDS.get(key) or (key if key in StepMemory.model_fields else None)
        if field is None:
            unknown[key] = value
        elif field not in data:
            data[field] = value
    metadata = data.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}  # pyright: ignore[reportUnknownArgumentType]
    if data.get("metadata") is not None and not isinstance(data.get("metadata"), Mapping):
        raise ValidationError(f"metadata must be a JSON object, got {data['metadata']!r}")
    if unknown:
        metadata.setdefault("imported", unknown)
    original_id = data.pop("id", None)
    for name in _IDS:
        if name in data:
            data[name] = _id_text(name, data[name])
    for name, given in (("user_id", user_id), ("agent_id", agent_id)):
        if data.get(name) is None and given is not None:
            data[name] = given
    point_id = _point_id(original_id, data, metadata)
    if point_id is not None:
        data["id"] = point_id
    for name in ("env_pre", "env_post"):
        if data.get(name) is not None:
            data[name] = _env(name, data[name])
    if "created_at" in data:
        data["created_at"] = _time(data["created_at"])
    data["metadata"] = metadata
    return data
