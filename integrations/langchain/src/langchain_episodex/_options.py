"""Recall options the adapters pass through to the core, checked once at construction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from episodex import EpisodicMemory, RecallOptions, SyncEpisodicMemory, validate_recall_options

__all__ = ["RECALL_OPTIONS", "check_recall_options", "core_memory"]

#: The keyword arguments of `EpisodicMemory.recall` an adapter may set: the core's type's keys.
RECALL_OPTIONS: frozenset[str] = RecallOptions.__optional_keys__


def check_recall_options(
    options: Mapping[str, Any],
    owner: str | None = None,
    *,
    memory: EpisodicMemory | SyncEpisodicMemory | None = None,
) -> dict[str, Any]:
    """The options as a dict, by the core's one check (a `ConfigurationError`, a ValueError).

    With `memory`, weights its store cannot run (every stream at 0, a SPLADE weight on a store
    without SPLADE) are refused too.
    """
    return dict(validate_recall_options(options, owner=owner, memory=memory))


def core_memory(value: object) -> object:
    """The async core memory behind a `SyncEpisodicMemory`; anything else unchanged."""
    return value.memory if isinstance(value, SyncEpisodicMemory) else value
