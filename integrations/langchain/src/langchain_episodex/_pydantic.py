"""Pydantic's validation errors as the typed `ConfigurationError` of episodex."""

from __future__ import annotations

from episodex import ConfigurationError
from pydantic import ValidationError as PydanticValidationError

__all__ = ["configuration_error"]


def configuration_error(owner: str, exc: PydanticValidationError) -> ConfigurationError:
    """One readable sentence per bad constructor argument of `owner`."""
    parts: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or owner
        if err["type"] == "missing":
            parts.append(f"{loc} is required")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{loc} is not an argument of {owner}")
        else:
            shown = repr(err.get("input"))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')} (got {shown})")
    return ConfigurationError(f"invalid {owner}: " + "; ".join(parts))
