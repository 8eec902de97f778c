"""Whose memory: the ids of a call, by the core's one rule, from what a LangChain run carries.

Every piece of this package (retrievers, the classic memory, the middleware, LCEL, the memory
tool) picks its ids with `run_scope`, which applies `episodex.resolve_scope`: for each id, an
explicit argument wins, then the runtime context (`context=` of a LangGraph or `create_agent`
run), then the config's `configurable`, and for the conversation, last, the `thread_id`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from episodex import MemoryScope, resolve_scope
from langchain_core.runnables import RunnableConfig, ensure_config

__all__ = ["WHERE", "EpisodicContext", "run_scope"]

WHERE = 'the runtime context (EpisodicContext) or the config\'s "configurable"'

# Where LangGraph keeps the run's `Runtime` (and so its `context`) inside the config.
_RUNTIME_KEY = "__pregel_runtime"


class EpisodicContext(TypedDict, total=False):
    """The ids the adapters read at run time; every key is optional.

    Pass it as the agent's runtime context (`create_agent(..., context_schema=EpisodicContext)`
    then `agent.invoke(..., context={"user_id": "u1"})`), or put the same keys in the config's
    `configurable` (`agent.batch(inputs, config=[{"configurable": {"user_id": "u1"}}, ...])`,
    or any LCEL chain). Any mapping, dataclass or object with these attributes works as a
    context, so an application's own context class only needs the same field names.

    For each id, the first of these that names it wins: an explicit argument (given to the
    adapter's constructor or call), the runtime context, the config's `configurable`, and for
    the conversation the LangGraph `thread_id`.
    """

    user_id: str
    """The end user: recall and recording are confined to this user."""
    agent_id: str
    """The agent (bot) the user talks to."""
    conversation_id: str
    """The current conversation (a chat thread)."""


def run_scope(
    explicit: Mapping[str, str | None],
    config: RunnableConfig | None = None,
    *,
    context: object = None,
    where: str = WHERE,
) -> MemoryScope:
    """The ids of one call: `explicit`, else the run's context, configurable and thread id.

    Args:
        explicit: The ids given to the adapter (None: not given).
        config: The run's config; None reads the config of the run this call is inside.
        context: The runtime context when the caller has it; else the one in the config.
        where: Where a caller can put the ids, for the error when none names the user or agent.

    Raises:
        ConfigurationError: No user or agent id anywhere.
        ValidationError: The id that wins (or the thread id) breaks the store's id rule.
    """
    merged = ensure_config(config)
    configurable: Mapping[str, Any] = merged.get("configurable") or {}
    if context is None:
        context = getattr(configurable.get(_RUNTIME_KEY), "context", None)
    return resolve_scope(
        explicit=explicit,
        context=context,
        configurable=configurable,
        thread_id=configurable.get("thread_id"),
        where=where,
    )
