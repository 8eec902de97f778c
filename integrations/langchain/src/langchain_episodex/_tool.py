"""`create_memory_search_tool`: the agent searches its own episodes with the user's ids."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from numbers import Integral
from typing import Any

from episodex import ConfigurationError, EpisodicMemory, MemoryScope, ValidationError
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from langchain_episodex._context import run_scope
from langchain_episodex._options import check_recall_options, core_memory
from langchain_episodex._recall import arecall_answer, recall_answer
from langchain_episodex._settings import check_ids, check_max_tokens
from langchain_episodex._summaries import SEARCH_ARTIFACT, recalled_count

__all__ = ["NOTHING_FOUND", "create_memory_search_tool"]

NOTHING_FOUND = "No earlier episodes match this search."
"""What the tool answers when no episode matches."""

_UNAVAILABLE = "Memory is unavailable just now; answer without it."
"""What the tool answers when the memory could not be searched (the failure is logged)."""

logger = logging.getLogger("langchain_episodex")


def _reply(text: str) -> tuple[str, dict[str, int]]:
    # The artifact marks the reply as the memory's own, whatever the tool's name: recorders
    # then store a marker, not the recalled episodes as words of the current conversation.
    return text, {SEARCH_ARTIFACT: recalled_count(text)}


def _scope_or_none(
    explicit: Mapping[str, str | None], config: RunnableConfig
) -> MemoryScope | None:
    """The run's ids, or None (logged) when the run does not name them by the id rule."""
    try:
        return run_scope(explicit, config)
    except (ConfigurationError, ValidationError) as exc:
        # Raised out of the tool it would end the agent's run after the model's first turn
        # (and any tool called beside this one) had run, and cost the user the answer; the
        # model is told memory is unavailable instead, the developer why in the log.
        logger.warning(
            "memory search tool: the run's ids cannot be worked out (%s); answering without memory",
            exc,
        )
        return None


def _nothing_shown(matched: int, max_tokens: int | None) -> str:
    # "No episode matches" would be untrue when some matched but none fits the budget: the
    # model would answer as if memory held nothing, and the developer would not see why.
    if not matched:
        return NOTHING_FOUND
    return (
        f"{matched} earlier episode(s) match this search, but none fits in this tool's answer "
        f"budget (max_tokens={max_tokens}); answer without them."
    )


def _unavailable() -> str:
    # LangGraph's ToolNode re-raises a tool's errors, which would end the agent's run: the
    # model is told memory is unavailable instead, and answers without it.
    logger.warning("memory search tool: recall failed; answering without memory", exc_info=True)
    return _UNAVAILABLE


_DESCRIPTION = (
    "Search your memory of earlier conversations with this user: what they asked, told you "
    "and what was done. Give a short search query; returns the matching episodes, best first."
)


class _SearchArgs(BaseModel):
    """The only thing the model chooses: what to search for (never whose memory)."""

    query: str = Field(description="What to look for in earlier conversations.")


def create_memory_search_tool(
    memory: EpisodicMemory | Any,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    conversation_id: str | None = None,
    k: int = 5,
    name: str = "search_memory",
    description: str = _DESCRIPTION,
    max_tokens: int | None = None,
    recall_options: Mapping[str, Any] | None = None,
) -> BaseTool:
    """A LangChain tool an agent calls to search its own episodic memory.

    The model only gives the query: whose memory is searched comes from the run, by the
    package's one id rule (the ids given here, then the runtime context, then the config's
    `configurable`, and for the conversation last the `thread_id`), so one user's
    episodes never reach another user's run, whatever the model writes in its arguments. The
    search is an `EpisodicRetriever` run under the tool's run, so tracing sees the query and
    the documents. The tool answers with the `<recalled_episodes>` block; its `ToolMessage`
    carries the artifact `{"episodex_memory_search": <episodes shown>}`, by which the
    middleware records the reply as `[recalled N episodes]`, not as this conversation's words.

    When the memory cannot be searched (engine or embedder failure), or the run does not name
    its ids by the id rule (no user anywhere, a `thread_id` too long to be a conversation id),
    the failure is logged and the tool tells the model so, rather than raising out of the
    agent's run.

    ```python
    # docs: no-run (needs a chat model; examples/langchain_agent_middleware.py runs this offline)
    from langchain.agents import create_agent
    from langchain_episodex import EpisodicContext, create_memory_search_tool

    search = create_memory_search_tool(memory, agent_id="support")
    agent = create_agent(model, tools=[search], context_schema=EpisodicContext)
    agent.invoke({"messages": [...]}, context={"user_id": "u1"})
    ```

    `EpisodicMemoryMiddleware(..., search_tool=True)` registers the same tool with the agent.

    Args:
        memory: The core memory (a `SyncEpisodicMemory` works too).
        user_id: The user, when every run is the same user's.
        agent_id: The agent, when the runtime context does not name it.
        conversation_id: The conversation, when every run is the same one's (None: from the
            runtime context, the config's `configurable` or its `thread_id`); the episodes
            of this conversation are shown as the current conversation's.
        k: Most episodes one search returns from earlier conversations, and most from the
            current one.
        name: The tool's name, as the model sees it.
        description: The tool's description, as the model sees it.
        max_tokens: Token budget of the answer.
        recall_options: Extra `EpisodicMemory.recall` options.

    Raises:
        ConfigurationError: A bad argument.
    """
    core = core_memory(memory)
    if not isinstance(core, EpisodicMemory):
        raise ConfigurationError(
            f"memory must be an episodex EpisodicMemory, got {type(core).__name__}"
        )
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"k must be an integer >= 1, got {k!r}")
    k = int(k)  # a numpy integer as the Python int it equals
    for label, value in (("name", name), ("description", description)):
        if not isinstance(value, str) or not value.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"{label} must be a non-empty string, got {value!r}")
    try:
        options = check_recall_options(
            recall_options or {}, "create_memory_search_tool", memory=core
        )
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    options.setdefault("previous_conversation_limit", k)
    options.setdefault("same_conversation_limit", k)
    explicit = {"user_id": user_id, "agent_id": agent_id, "conversation_id": conversation_id}
    # Checked now, so a bad default fails here rather than in the middle of a run.
    check_ids(explicit)
    check_max_tokens(max_tokens)

    def search(query: str, config: RunnableConfig) -> tuple[str, dict[str, int]]:
        scope = _scope_or_none(explicit, config)
        if scope is None:
            return _reply(_UNAVAILABLE)
        try:
            block, matched = recall_answer(
                core, scope, query, options=options, max_tokens=max_tokens, config=config
            )
        except Exception:
            return _reply(_unavailable())
        return _reply(block or _nothing_shown(matched, max_tokens))

    async def asearch(query: str, config: RunnableConfig) -> tuple[str, dict[str, int]]:
        scope = _scope_or_none(explicit, config)
        if scope is None:
            return _reply(_UNAVAILABLE)
        try:
            block, matched = await arecall_answer(
                core, scope, query, options=options, max_tokens=max_tokens, config=config
            )
        except Exception:
            return _reply(_unavailable())
        return _reply(block or _nothing_shown(matched, max_tokens))

    return StructuredTool.from_function(
        func=search,
        coroutine=asearch,
        name=name,
        description=description,
        args_schema=_SearchArgs,
        response_format="content_and_artifact",
    )
