"""Whose memory: user, agent and conversation ids, from a runtime context or from defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from episodex import ConfigurationError, ValidationError

__all__ = ["EpisodicContext", "Scope", "resolve_scope"]


class EpisodicContext(TypedDict, total=False):
    """The ids the adapters read at run time; every key is optional.

    Pass it as the agent's runtime context (`create_agent(..., context_schema=EpisodicContext)`
    then `agent.invoke(..., context={"user_id": "u1"})`), or as `configurable` in an LCEL
    chain's config. Any mapping, dataclass or object with these attributes works too, so an
    application's own context class only needs the same field names. A key that is missing
    falls back to the default given to the adapter's constructor.
    """

    user_id: str
    """The end user: recall and recording are confined to this user."""
    agent_id: str
    """The agent (bot) the user talks to."""
    conversation_id: str
    """The current conversation (a chat thread)."""


@dataclass(frozen=True)
class Scope:
    """The resolved ids for one call."""

    user_id: str
    agent_id: str
    conversation_id: str | None


def _lookup(source: object, name: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)  # pyright: ignore[reportUnknownMemberType]
    return getattr(source, name, None)


def _checked(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string, got {value!r}")
    return value


def resolve_scope(
    source: object,
    *,
    user_id: str | None,
    agent_id: str | None,
    conversation_id: str | None,
    where: str,
) -> Scope:
    """Ids from `source` (a mapping or an object), else the defaults given.

    Args:
        source: The runtime context, a `configurable` mapping, or None.
        user_id: Default user id.
        agent_id: Default agent id.
        conversation_id: Default conversation id.
        where: Where the caller can put the ids, for the error message.

    Raises:
        ConfigurationError: No user or agent id from either place.
        ValidationError: An id that is not a non-empty string.
    """
    ids: dict[str, str | None] = {}
    for name, default in (
        ("user_id", user_id),
        ("agent_id", agent_id),
        ("conversation_id", conversation_id),
    ):
        value = _lookup(source, name)
        ids[name] = default if value is None else _checked(name, value)
    for name in ("user_id", "agent_id"):
        if ids[name] is None:
            raise ConfigurationError(
                f"no {name}: give {name}= to the constructor or put it in {where}"
            )
    return Scope(
        user_id=_checked("user_id", ids["user_id"]),
        agent_id=_checked("agent_id", ids["agent_id"]),
        conversation_id=None
        if ids["conversation_id"] is None
        else _checked("conversation_id", ids["conversation_id"]),
    )
