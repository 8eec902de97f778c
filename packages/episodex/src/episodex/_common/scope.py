"""Whose memory: the one rule every adapter uses to pick the user, agent and conversation ids.

For each id, the first place that names it wins:

1. an explicit argument (given to the adapter's constructor or to the call);
2. the runtime context (LangChain/LangGraph `context=`, a LlamaIndex workflow context);
3. the run's config (`config["configurable"]` in LangChain);
4. for the conversation only: the framework's thread or session id.

A user or agent id that none of them names is a `ConfigurationError` (memory never guesses
whose it is); a missing conversation id stays None, for the adapter to decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from episodex._common.errors import ConfigurationError, ValidationError
from episodex._common.validation import id_problem

__all__ = ["ID_NAMES", "MemoryScope", "resolve_scope"]

ID_NAMES = ("user_id", "agent_id", "conversation_id")
"""The ids `resolve_scope` reads from each source."""


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """The ids one call of an adapter works under."""

    user_id: str
    """The end user: recall and recording never cross users."""
    agent_id: str
    """The agent (bot) the user talks to."""
    conversation_id: str | None
    """The current conversation, if any source named one."""


def _lookup(source: object, name: str) -> object:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return getattr(source, name, None)


def _checked(name: str, value: object, origin: str) -> str:
    # The store's one id rule, applied before the run: an id no write could store is refused
    # here, before the model or any tool runs, not after the answer exists.
    problem = id_problem(value)
    if problem is not None:
        raise ValidationError(f"{name} from {origin} {problem}")
    return str(value)


def _thread_conversation(thread_id: object) -> str:
    problem = id_problem(str(thread_id))
    if problem is not None:
        raise ValidationError(
            f"thread_id {problem}; it is the conversation id episodes are recorded under: use "
            "a shorter thread_id, or put a conversation_id in the runtime context"
        )
    return str(thread_id)


def resolve_scope(
    *,
    explicit: Mapping[str, str | None] | None = None,
    context: object = None,
    configurable: Mapping[str, Any] | None = None,
    thread_id: object = None,
    where: str = "the runtime context or the config",
) -> MemoryScope:
    """The user, agent and conversation ids of a call, by the precedence in this module's doc.

    Args:
        explicit: Ids given as arguments (None values count as not given).
        context: The runtime context: a mapping, dataclass or any object with the id
            attributes (missing ones are not given).
        configurable: The run's config mapping (LangChain's `config["configurable"]`).
        thread_id: The framework's thread or session id: the conversation when nothing
            above names one.
        where: Where a caller can put the ids, for the error message.

    Raises:
        ConfigurationError: No source names a user id or an agent id.
        ValidationError: The id that wins, or the thread id taken as the conversation, breaks
            the store's id rule (1 to 512 characters, not only whitespace).
    """
    sources = (("an argument", explicit), ("the runtime context", context))
    sources += (("the config", configurable),)
    found: dict[str, str | None] = {}
    for name in ID_NAMES:
        found[name] = None
        for origin, source in sources:
            value = _lookup(source, name)
            if value is not None:
                found[name] = _checked(name, value, origin)
                break
    if found["conversation_id"] is None and thread_id is not None and str(thread_id).strip():
        found["conversation_id"] = _thread_conversation(thread_id)
    for name in ("user_id", "agent_id"):
        if found[name] is None:
            raise ConfigurationError(f"no {name}: pass {name}= or put it in {where}")
    return MemoryScope(
        user_id=str(found["user_id"]),
        agent_id=str(found["agent_id"]),
        conversation_id=found["conversation_id"],
    )
