"""Constructor checks that fail with episodex's typed errors instead of pydantic's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from episodex._errors import ConfigurationError
from pydantic import ValidationError as PydanticValidationError

__all__ = ["configuration_errors", "require_id"]


def require_id(name: str, value: object) -> str:
    """Return `value` if it is a non-empty string, else raise `ConfigurationError`."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{name} must be a non-empty string, got {value!r}")
    return value


@contextlib.contextmanager
def configuration_errors(owner: str) -> Iterator[None]:
    """Turn a pydantic validation failure while building `owner` into a `ConfigurationError`."""
    try:
        yield
    except PydanticValidationError as exc:
        parts: list[str] = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or owner
            if err["type"] == "missing":
                parts.append(f"{field} is required")
                continue
            message = str(err["msg"]).removeprefix("Value error, ")
            shown = repr(err.get("input"))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            parts.append(f"{field}: {message} (got {shown})")
        raise ConfigurationError(f"invalid {owner}: " + "; ".join(parts)) from None
