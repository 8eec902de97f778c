"""Whose memory: user, agent and conversation ids, from a runtime context or from defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from episodex import ConfigurationError, ValidationError
from episodex._common.validation import require_id

__all__ = ["EpisodicContext", "Scope", "check_thread_id", "resolve_scope"]


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
    # The core's one id rule, applied before the run: an id no write could store is refused
    # here, before the model or any tool runs, not after the answer exists.
    return require_id(name, value)


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
        ValidationError: An id that breaks the store's id rule (1 to 512 characters, not
            only whitespace).
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


def check_thread_id(thread_id: object) -> str:
    """A LangGraph `thread_id` used as the conversation id, under the same id rule.

    Raises:
        ValidationError: The thread id is too long (or blank) to be a conversation id; pass a
            shorter `conversation_id` in the context instead.
    """
    try:
        return require_id("thread_id", str(thread_id))
    except ValidationError as exc:
        raise ValidationError(
            f"{exc}; it is the conversation id episodes are recorded under: use a shorter "
            "thread_id, or put a conversation_id in the runtime context"
        ) from None
