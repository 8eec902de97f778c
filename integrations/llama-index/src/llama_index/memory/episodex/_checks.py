"""Constructor checks that fail with episodex's typed errors instead of pydantic's."""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Generator, Mapping
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from episodex import (
    ConfigurationError,
    EpisodicMemory,
    RecallOptions,
    SyncEpisodicMemory,
    ValidationError,
    validate_recall_options,
)
from episodex import require_id as check_id

__all__ = [
    "RECALL_OPTIONS",
    "check_recall_options",
    "configuration_errors",
    "require_id",
    "tokens_to_cut",
]

RECALL_OPTIONS: frozenset[str] = RecallOptions.__optional_keys__
"""The `EpisodicMemory.recall` options an adapter passes through: the same in every adapter."""


def tokens_to_cut(tokens_to_truncate: object) -> int:
    """The tokens `Memory` asks a block's `atruncate` to cut, as an int of at least 0.

    A bool, a non-number or a number that is not finite is a `ValidationError`.
    """
    if (
        isinstance(tokens_to_truncate, bool)
        or not isinstance(tokens_to_truncate, numbers.Real)
        or not math.isfinite(float(tokens_to_truncate))
    ):
        raise ValidationError(
            f"tokens_to_truncate must be a number of tokens, got {tokens_to_truncate!r:.80}"
        )
    return max(int(float(tokens_to_truncate)), 0)


def require_id(name: str, value: object) -> str:
    """Return `value` if it meets the store's id rule, else raise `ConfigurationError`."""
    return check_id(name, value, error=ConfigurationError)


def check_recall_options(
    options: Mapping[str, Any],
    owner: str | None = None,
    *,
    memory: EpisodicMemory | SyncEpisodicMemory | None = None,
) -> dict[str, Any]:
    """A copy of `options`, by the core's one check (`ConfigurationError` for an unknown key).

    With `memory`, weights its store cannot run (every stream at 0, a SPLADE weight on a store
    without SPLADE) are refused too. A limit given here wins over the adapter's own limit
    setting.
    """
    return dict(validate_recall_options(options, owner=owner, memory=memory))


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
