"""Checks of an adapter's own settings, made when it is built rather than on every call.

The pieces that feed a prompt (middleware, LCEL runnable, memory tool) go on without memory
when a recall fails. A setting the core refuses on every call (an id it does not accept, a
token budget below 0) would then turn memory off for good, logged as an outage each turn; so
such settings are checked here, when the piece is made, and refused with `ConfigurationError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral

from episodex import ConfigurationError, require_id
from pydantic import ValidationInfo

__all__ = ["check_flag", "check_ids", "check_key", "check_max_tokens", "id_field", "key_field"]


def check_ids(ids: Mapping[str, object]) -> None:
    """Each id given (not None) must meet the store's id rule (`ConfigurationError`)."""
    for name, value in ids.items():
        if value is not None:
            require_id(name, value, error=ConfigurationError)


def id_field(value: str | None, info: ValidationInfo) -> str | None:
    """A pydantic field validator: an id field (None: from the run) must meet the id rule.

    For the adapters built as pydantic models (the retriever, the classic memory), which
    otherwise refused a blank or too long id only when a chain ran.
    """
    if value is not None:
        require_id(info.field_name or "id", value, error=ValueError)
    return value


def check_key(name: str, value: object) -> str:
    """A chain input, output or prompt variable key must be a non-blank string.

    No chain has a blank key (nor a prompt such a variable): taken, every call would fail.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{name} must be a non-blank string, got {value!r:.80}")
    return value


def key_field(value: str | None, info: ValidationInfo) -> str | None:
    """A pydantic field validator: `check_key` for a key field (None: worked out per call)."""
    if value is not None and not value.strip():
        raise ValueError(f"{info.field_name} must be a non-blank string")
    return value


def check_max_tokens(max_tokens: object) -> None:
    """A token budget must be None or an integer >= 0 (`ConfigurationError`)."""
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, Integral) or max_tokens < 0
    ):
        raise ConfigurationError(f"max_tokens must be an integer >= 0 or None, got {max_tokens!r}")


def check_flag(name: str, value: object) -> bool:
    """A yes/no option must be True or False (`ConfigurationError`).

    Taken by its truth, any non-empty text (`"no"`, `"false"`) meant yes; 0 and 1 are refused
    too, as the core refuses them for `with_stream_ranks`.
    """
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, got {value!r:.80}")
    return value
