"""`create_memory_search_tool`: an agent searches its own episodes through a `FunctionTool`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.memory.episodex._checks import check_recall_options, require_id
from llama_index.memory.episodex._llm import Encoding, counter_of
from llama_index.memory.episodex._messages import readable
from pydantic import BaseModel

from episodex import (
    DEFAULT_ENCODING,
    ConfigurationError,
    EpisodicMemory,
    SyncEpisodicMemory,
    format_recall,
    run_sync,
)

__all__ = ["DEFAULT_TOOL_DESCRIPTION", "create_memory_search_tool"]

logger = logging.getLogger(__name__)

DEFAULT_TOOL_DESCRIPTION = (
    "Search your memory of earlier conversations with this user: what they asked, what was "
    "done and decided. Give a short natural-language query; the answer lists the matching "
    "episodes, best first, or says that nothing matched."
)
"""What the model is told the memory tool does (the `description` default)."""

NOTHING_FOUND = "No remembered episode matches that query."
UNAVAILABLE = "Memory could not be searched just now; answer without it."
_NO_QUERY = "Give a query: a few words about what to look for."


class _SearchArgs(BaseModel):
    """What the model is shown it may give: the query only (never whose memory)."""

    query: str


def create_memory_search_tool(
    memory: EpisodicMemory | SyncEpisodicMemory,
    *,
    user_id: str,
    agent_id: str,
    conversation_id: str | None = None,
    name: str = "search_memory",
    description: str = DEFAULT_TOOL_DESCRIPTION,
    limit: int = 5,
    max_tokens: int | None = 1000,
    encoding: Encoding = DEFAULT_ENCODING,
    recall_options: Mapping[str, Any] | None = None,
) -> FunctionTool:
    """A `FunctionTool` with which an agent searches its own episodes (its only argument: a query).

    The ids are fixed here, never read from the model's arguments: whatever the model sends,
    the tool searches only `user_id`'s episodes with `agent_id`. The answer is episodex's
    `<recalled_episodes>` block (stored text escaped, within `max_tokens`). A failing store
    is logged and answered with a short notice, so the agent goes on without memory.

    ```python
    from episodex import EpisodicMemory
    from llama_index.memory.episodex import create_memory_search_tool

    memory = EpisodicMemory(path="./memory")
    tool = create_memory_search_tool(memory, user_id="alice", agent_id="support")
    print(tool.metadata.name)  # -> search_memory
    print(tool.call(query="refund").content)  # -> No remembered episode matches that query.
    memory.close()
    ```

    Then `FunctionAgent(llm=llm, tools=[tool])`: the agent calls it when it decides to.

    Args:
        memory: The episodic memory to search (a `SyncEpisodicMemory` works too).
        user_id: The end user whose episodes are searched.
        agent_id: The agent.
        conversation_id: The current conversation: its episodes come back as their own
            section; None searches every conversation alike.
        name: The tool's name as the model sees it.
        description: What the model is told the tool does.
        limit: Most episodes from other conversations (and from this one).
        max_tokens: A token budget for the answer; None for no budget.
        encoding: How `max_tokens` counts: a tiktoken encoding name (offline cl100k by
            default), a counter (`text -> int`) or a tokenizer (`text -> list`), such as the
            one of the agent's own model, so the budget is in that model's tokens.
        recall_options: More `EpisodicMemory.recall` options (stream weights, `rrf_k`).
    """
    core = memory.memory if isinstance(memory, SyncEpisodicMemory) else memory
    if not isinstance(core, EpisodicMemory):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            "memory must be an episodex.EpisodicMemory or SyncEpisodicMemory, got "
            f"{type(memory).__name__}"
        )
    user = require_id("user_id", user_id)
    agent = require_id("agent_id", agent_id)
    conversation = (
        None if conversation_id is None else require_id("conversation_id", conversation_id)
    )
    require_id("name", name)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"limit must be an integer >= 1, got {limit!r}")
    # Checked now: at call time a bad budget would fail every search, which the tool then
    # words as "memory unavailable", and memory would silently never work.
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0  # pyright: ignore[reportUnnecessaryIsInstance]
    ):
        raise ConfigurationError(f"max_tokens must be an integer >= 0 or None, got {max_tokens!r}")
    count = _checked_counter(encoding)
    options: dict[str, Any] = {
        "previous_conversation_limit": limit,
        "same_conversation_limit": limit if conversation is not None else 0,
        # The tool answers with a prompt block, which never shows which streams found an episode.
        "with_stream_ranks": False,
        **check_recall_options(recall_options or {}, memory=core),
    }

    # A model adds arguments a search tool does not have (`limit`, `top_k`, a `user_id`) or
    # leaves the query out: Python would refuse the call, and the model would be shown this
    # function's internal name and no search. What is not the query is ignored (the ids are
    # the tool's, whatever the model writes), and a missing query is answered like a blank one.
    async def search_memory(query: object = None, **_ignored: object) -> str:
        if not isinstance(query, str) or not query.strip():
            return _NO_QUERY
        try:
            result = await core.recall(
                user_id=user,
                agent_id=agent,
                query=readable(query),
                conversation_id=conversation,
                **options,
            )
            block = format_recall(result, max_tokens=max_tokens, encoding=count)
        except Exception:
            # Any failure, not only episodex's typed ones: an episode stored by another program
            # that cannot be rendered, or a custom embedder's own error, would otherwise reach
            # the agent as a failed tool call instead of a notice it can answer around.
            logger.warning(
                "memory search tool: recall failed; answering without memory", exc_info=True
            )
            return UNAVAILABLE
        if block:
            return block
        matched = sum(len(items) for items in result.values())
        if not matched:
            return NOTHING_FOUND
        # "No episode matches" would be untrue: some did, but none fits the budget.
        return (
            f"{matched} remembered episode(s) match that query, but none fits in this tool's "
            f"answer budget (max_tokens={max_tokens}); answer without them."
        )

    def search_memory_sync(query: object = None, **_ignored: object) -> str:
        return run_sync(search_memory(query))

    search_memory.__doc__ = search_memory_sync.__doc__ = description
    return FunctionTool.from_defaults(
        fn=search_memory_sync,
        async_fn=search_memory,
        name=name,
        description=description,
        fn_schema=_SearchArgs,
    )


def _checked_counter(encoding: Encoding) -> Callable[[str], int]:
    """`encoding`'s counter, tried now.

    At call time a bad one would fail every search, which the tool words as "memory
    unavailable".
    """
    if not isinstance(encoding, str) and not callable(encoding):
        raise ConfigurationError(
            "encoding must be a tiktoken encoding name, a token counter (text -> int) or a "
            f"tokenizer (text -> list), got {type(encoding).__name__}"
        )
    try:
        count = counter_of(encoding)
        count("a")
    except ConfigurationError:
        raise
    except Exception as error:
        raise ConfigurationError(f"encoding {encoding!r} cannot count tokens: {error}") from error
    return count
