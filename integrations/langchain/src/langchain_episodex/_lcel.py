"""LCEL: a runnable that recalls the block for a chain input, and a helper that records after."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from episodex import ConfigurationError, ValidationError, run_sync
from episodex import EpisodicMemory as CoreMemory
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from langchain_episodex._context import Scope, resolve_scope
from langchain_episodex._options import check_recall_options, core_memory
from langchain_episodex._summaries import exchange_summaries, message_text

__all__ = ["arecord_exchange", "recall_episodes", "record_exchange"]

_WHERE = 'the config\'s "configurable" (user_id, agent_id, conversation_id)'


def _memory(memory: object) -> CoreMemory:
    memory = core_memory(memory)
    if not isinstance(memory, CoreMemory):
        raise ConfigurationError(
            f"memory must be an episodex EpisodicMemory, got {type(memory).__name__}"
        )
    return memory


def _scope(config: RunnableConfig | None, defaults: Mapping[str, str | None]) -> Scope:
    configurable = (config or {}).get("configurable") or {}
    return resolve_scope(configurable, where=_WHERE, **defaults)


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

    The ids come from the config's `configurable` (the keys of `EpisodicContext`), else from
    the defaults given here. The input may be a mapping (its `input_key` is the query), a
    string, or a message.

    Args:
        memory: The core memory.
        input_key: The input field holding the user's message.
        user_id: Default user id.
        agent_id: Default agent id.
        conversation_id: Default conversation id.
        max_tokens: Token budget of the block.
        recall_options: Extra `EpisodicMemory.recall` options.
    """
    core = _memory(memory)
    try:
        options = check_recall_options(recall_options or {})
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    defaults = {"user_id": user_id, "agent_id": agent_id, "conversation_id": conversation_id}

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
        scope = _scope(config, defaults)
        if not query.strip():
            return ""
        return await core.recall_block(
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            conversation_id=scope.conversation_id,
            query=query,
            max_tokens=max_tokens,
            **options,
        )

    def recall(value: Any, config: RunnableConfig) -> str:
        return run_sync(arecall(value, config))

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
    """Record a question and the chain's answer as one episode; returns its id.

    Args:
        memory: The core memory.
        question: The user's message (a string or a message).
        answer: The chain's output (a string or a message).
        user_id: The user, when `config` does not name one.
        agent_id: The agent, when `config` does not name one.
        conversation_id: The conversation, when `config` does not name one.
        config: The config the chain ran with; its `configurable` ids win.
        tools_invoked: Tools the chain called.
    """
    core = _memory(memory)
    scope = _scope(
        config, {"user_id": user_id, "agent_id": agent_id, "conversation_id": conversation_id}
    )
    if scope.conversation_id is None:
        raise ConfigurationError(f"no conversation_id: give conversation_id= or put it in {_WHERE}")
    tools = list(tools_invoked)
    short, long = exchange_summaries(message_text(question), message_text(answer), tools)
    return await core.memorize(
        short_summary=short,
        long_summary=long,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        conversation_id=scope.conversation_id,
        tools_invoked=tools,
        metadata={"source": "langchain-lcel"},
    )


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
    """Record a question and the chain's answer as one episode; returns its id.

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
