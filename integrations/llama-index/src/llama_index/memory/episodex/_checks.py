"""Constructor checks that fail with episodex's typed errors instead of pydantic's."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Mapping
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from episodex import ConfigurationError, RecallOptions
from episodex._common.validation import require_id as check_id

__all__ = ["RECALL_OPTIONS", "check_recall_options", "configuration_errors", "require_id"]

#: The adapters' own settings for these `RecallOptions`: not passed in `recall_options` too.
OWN_SETTINGS = frozenset({"previous_conversation_limit", "same_conversation_limit"})

RECALL_OPTIONS: frozenset[str] = RecallOptions.__optional_keys__ - OWN_SETTINGS
"""The `EpisodicMemory.recall` options an adapter passes through; ids and limits are its own."""


def require_id(name: str, value: object) -> str:
    """Return `value` if it meets the store's id rule, else raise `ConfigurationError`."""
    return check_id(name, value, error=ConfigurationError)


def check_recall_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options`, or `ConfigurationError` naming any key recall does not take here."""
    unknown = sorted(str(k) for k in options if k not in RECALL_OPTIONS)
    if unknown:
        raise ConfigurationError(
            f"recall_options {unknown} not allowed: give only {sorted(RECALL_OPTIONS)} "
            "(ids and limits have their own settings)"
        )
    return dict(options)


@contextlib.contextmanager
def configuration_errors(owner: str) -> Generator[None]:
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
