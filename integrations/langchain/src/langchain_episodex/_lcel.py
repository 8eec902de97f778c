"""LCEL: a runnable that recalls the block for a chain input, and a helper that records after."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from episodex import ConfigurationError, ValidationError, run_sync
from episodex import EpisodicMemory as CoreMemory
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from langchain_episodex._context import WHERE, run_scope
from langchain_episodex._options import check_recall_options, core_memory
from langchain_episodex._positions import exchange_slot, stored_length
from langchain_episodex._recall import arecall_block, recall_block
from langchain_episodex._settings import check_ids, check_key, check_max_tokens
from langchain_episodex._summaries import (
    answer_value,
    exchange_episodes,
    exchange_records,
    message_text,
)

__all__ = ["arecord_exchange", "recall_episodes", "record_exchange"]

logger = logging.getLogger("langchain_episodex")


def _memory(memory: object) -> CoreMemory:
    memory = core_memory(memory)
    if not isinstance(memory, CoreMemory):
        raise ConfigurationError(
            f"memory must be an episodex EpisodicMemory, got {type(memory).__name__}"
        )
    return memory


def _recall_failed() -> None:
    # The runnable feeds the prompt of the model call: without memory the chain still answers.
    logger.warning("episodic recall failed; the chain goes on without memory", exc_info=True)


def recall_episodes(
    memory: CoreMemory | Any,
    *,
    input_key: str = "input",
    user_id: str | None = None,
    agent_id: str | None = None,
    conversation_id: str | None = None,
    max_tokens: int | None = None,
    recall_options: Mapping[str, Any] | None = None,
) -> Runnable[Any, str]:
    """A runnable from a chain input to its `<recalled_episodes>` block (`""` for none).

    Made for `RunnablePassthrough.assign`, so the block lands in the prompt's variables:

    ```python
    # docs: no-run (needs a chat model and a prompt; examples/langchain_lcel.py runs this offline)
    from langchain_core.runnables import RunnablePassthrough
    from langchain_episodex import recall_episodes, record_exchange

    recall = recall_episodes(memory, input_key="question", agent_id="assistant")
    chain = RunnablePassthrough.assign(recalled_episodes=recall) | prompt | model
    config = {"configurable": {"user_id": "u1", "conversation_id": "c1"}}
    answer = chain.invoke({"question": "Where is my refund?"}, config=config)
    record_exchange(memory, "Where is my refund?", answer, agent_id="assistant", config=config)
    ```

    Ids follow the package's one rule (see `EpisodicContext`): those given here win, then a
    LangGraph runtime context, then the config's `configurable`, then its `thread_id`. The
    recall is an `EpisodicRetriever` run under this runnable's run, so tracing sees the query
    and the documents. The input may be a mapping (its `input_key` is the query), a string,
    or a message. A failing recall is logged and gives `""`, so the chain still answers.

    Args:
        memory: The core memory.
        input_key: The input field holding the user's message.
        user_id: The user (None: from the run).
        agent_id: The agent (None: from the run).
        conversation_id: The conversation (None: from the run).
        max_tokens: Token budget of the block.
        recall_options: Extra `EpisodicMemory.recall` options.
    """
    core = _memory(memory)
    try:
        options = check_recall_options(recall_options or {}, "recall_episodes", memory=core)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    defaults = {"user_id": user_id, "agent_id": agent_id, "conversation_id": conversation_id}
    check_ids(defaults)
    check_max_tokens(max_tokens)
    check_key("input_key", input_key)

    def query_of(value: Any) -> str:
        if isinstance(value, Mapping):
            if input_key not in value:
                raise ValidationError(
                    f"the chain input has no {input_key!r}; it has {sorted(value)}"
                )
            value = value[input_key]
        return message_text(value)

    async def arecall(value: Any, config: RunnableConfig) -> str:
        query = query_of(value)
        scope = run_scope(defaults, config)
        if not query.strip():
            return ""
        try:
            return await arecall_block(
                core, scope, query, options=options, max_tokens=max_tokens, config=config
            )
        except Exception:
            _recall_failed()
            return ""

    def recall(value: Any, config: RunnableConfig) -> str:
        query = query_of(value)
        scope = run_scope(defaults, config)
        if not query.strip():
            return ""
        try:
            return recall_block(
                core, scope, query, options=options, max_tokens=max_tokens, config=config
            )
        except Exception:
            _recall_failed()
            return ""

    return RunnableLambda(recall, afunc=arecall, name="recall_episodes")


async def arecord_exchange(
    memory: CoreMemory | Any,
    question: Any,
    answer: Any,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    conversation_id: str | None = None,
    config: RunnableConfig | None = None,
    tools_invoked: Sequence[str] = (),
) -> str:
    """Record a question and the chain's answer as an episode; returns its id.

    An exchange too long for one episode is stored as several (the core's span rule); the
    id returned is then the first one's. The question and the answer take the next two
    message indexes of the conversation (`start_index`, `end_index`): one past the highest
    its stored episodes hold, and after those the conversation's other writers in this process
    took through the same core memory and have not stored yet (exchanges recorded at the same
    time, an `EpisodicConversationMemory`'s exchanges waiting to be written); other processes
    recording the same conversation at the same time may still be given the same indexes.

    Args:
        memory: The core memory.
        question: The user's message (a string or a message).
        answer: The chain's output: a string, a message, or parsed data (a dict, a list, a
            pydantic model), recorded as its JSON as the classic memory records it.
        user_id: The user (None: from `config`).
        agent_id: The agent (None: from `config`).
        conversation_id: The conversation (None: from `config`, its `configurable` or its
            `thread_id`).
        config: The config the chain ran with.
        tools_invoked: Tools the chain called.

    Raises:
        ValidationError: The question has no text, a value has none to read, or parsed data
            has no JSON (it contains itself, or has keys JSON cannot hold); nothing is stored.
    """
    core = _memory(memory)
    scope = run_scope(
        {"user_id": user_id, "agent_id": agent_id, "conversation_id": conversation_id}, config
    )
    if scope.conversation_id is None:
        raise ConfigurationError(f"no conversation_id: give conversation_id= or put it in {WHERE}")
    # A string is refused, not stored letter by letter as the names of tools.
    if isinstance(tools_invoked, str) or not all(
        isinstance(name, str) and name.strip()  # pyright: ignore[reportUnnecessaryIsInstance]
        for name in tools_invoked
    ):
        raise ValidationError(
            f"tools_invoked must be a list of tool names, got {tools_invoked!r:.80}"
        )
    tools = list(tools_invoked)
    episodes = exchange_episodes(question, answer_value(answer), tools)
    # One batch: a long exchange's episodes are stored all together or not at all.
    with exchange_slot(core, scope) as slot:
        first = slot.take(await stored_length(core, scope), max(e.end_index for e in episodes) + 1)
        ids = await core.memorize_many(
            exchange_records(scope, episodes, first, source="langchain-lcel", tools=tools)
        )
    return ids[0]


def record_exchange(
    memory: CoreMemory | Any,
    question: Any,
    answer: Any,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    conversation_id: str | None = None,
    config: RunnableConfig | None = None,
    tools_invoked: Sequence[str] = (),
) -> str:
    """Record a question and the chain's answer as an episode; returns its id.

    The synchronous twin of `arecord_exchange`, same arguments.
    """
    return run_sync(
        arecord_exchange(
            memory,
            question,
            answer,
            user_id=user_id,
            agent_id=agent_id,
            conversation_id=conversation_id,
            config=config,
            tools_invoked=tools_invoked,
        )
    )
