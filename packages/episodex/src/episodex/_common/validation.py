"""Validation shared by the pydantic models: readable errors, JSON objects, parsing."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from episodex._common.errors import ValidationError

__all__ = [
    "describe_validation_error",
    "json_object",
    "parse_model",
    "require_int",
    "require_text",
    "require_weight",
]

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: PydanticValidationError, what: str) -> str:
    """One readable clause per pydantic error: field, problem, and what was given."""
    parts: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or what
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            parts.append(f"{loc} is required")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{loc} is not a field of {what}")
        elif "got " in msg:
            parts.append(f"{loc}: {msg}")
        else:
            shown = repr(err.get("input"))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            parts.append(f"{loc}: {msg} (got {shown})")
    return f"invalid {what}: " + "; ".join(parts)


def json_object(value: dict[str, Any]) -> dict[str, Any]:
    """A field validator: the value must survive a strict JSON round trip (returns the copy)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"must be a JSON object (str keys, JSON values, no NaN): {exc}") from exc
    return json.loads(text)


def parse_model(cls: type[M], data: object, *, what: str, where: str = "") -> M:
    """Validate a mapping as `cls` (an instance passes through), raising episodex's error.

    Args:
        cls: The model class.
        data: An instance or a mapping of its fields.
        what: How the message names the record ("episode", "step memory").
        where: A prefix locating the record, such as "episode 3: ".
    """
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ValidationError(
            f"{where}expected a mapping of {what} fields, got {type(data).__name__}"
        )
    try:
        return cls.model_validate(dict(data))  # pyright: ignore[reportUnknownArgumentType]
    except PydanticValidationError as exc:
        raise ValidationError(where + describe_validation_error(exc, what)) from None


def require_text(name: str, value: object) -> str:
    """`value` must be a string with at least one non-space character."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string, got {value!r}")
    return value


def require_int(
    name: str, value: object, *, minimum: int = 0, error: type[ValueError] = ValidationError
) -> int:
    """`value` must be an integer (not a bool) of at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise error(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def require_weight(name: str, value: object, *, error: type[ValueError] = ValidationError) -> float:
    """`value` must be a finite number (not a bool) of at least 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise error(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)
