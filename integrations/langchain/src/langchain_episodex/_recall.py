"""Recall for a prompt block, always as an `EpisodicRetriever` run, so tracing sees it.

The middleware, the LCEL runnable, the classic memory and the memory tool recall through
here: the retriever is invoked with the run's config, so every callback handler (LangSmith,
a `BaseCallbackHandler`) gets `on_retriever_start` with the query and `on_retriever_end`
with the episodes, as a child of the run that asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from episodex import EpisodicMemory, MemoryScope
from langchain_core.runnables import RunnableConfig

from langchain_episodex._documents import render_documents
from langchain_episodex._retrievers import EpisodicRetriever

__all__ = ["arecall_block", "recall_block", "recall_retriever"]

# The core's defaults for the two limits (RecallOptions documents them): the retriever is
# given both, so it returns what a plain `recall` would.
_PREVIOUS, _SAME = 10, 5


def recall_retriever(
    memory: EpisodicMemory, scope: MemoryScope, options: Mapping[str, Any]
) -> tuple[EpisodicRetriever, dict[str, Any]]:
    """A retriever for `scope` returning what `recall` would, and the call's options.

    The documents carry no `streams` unless `options` asks for `with_stream_ranks`.
    """
    options = dict(options)
    # A prompt block never shows which streams found an episode: unless asked for, the recall
    # skips the id-only searches behind `streams` (same episodes, same order, less time).
    options.setdefault("with_stream_ranks", False)
    options.setdefault("previous_conversation_limit", _PREVIOUS)
    options.setdefault("same_conversation_limit", _SAME)
    if scope.conversation_id is None:
        options["same_conversation_limit"] = 0
    k = max(
        1, int(options["previous_conversation_limit"]) + int(options["same_conversation_limit"])
    )
    retriever = EpisodicRetriever(
        memory=memory,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        conversation_id=scope.conversation_id,
        k=k,
        # The callers (middleware, classic memory, LCEL, tool) handle a failure themselves:
        # each counts, logs and words it its own way.
        raise_on_failure=True,
    )
    return retriever, options


def recall_answer(
    memory: EpisodicMemory,
    scope: MemoryScope,
    query: str,
    *,
    options: Mapping[str, Any],
    max_tokens: int | None,
    config: RunnableConfig | None = None,
) -> tuple[str, int]:
    """The `<recalled_episodes>` block for `query` (`""` for none), and how many episodes matched.

    Recalled as a retriever run; some that matched may not fit `max_tokens`.
    """
    retriever, call = recall_retriever(memory, scope, options)
    docs = retriever.invoke(query, config, **call)
    return render_documents(docs, max_tokens=max_tokens), len(docs)


async def arecall_answer(
    memory: EpisodicMemory,
    scope: MemoryScope,
    query: str,
    *,
    options: Mapping[str, Any],
    max_tokens: int | None,
    config: RunnableConfig | None = None,
) -> tuple[str, int]:
    """The async twin of `recall_answer`."""
    retriever, call = recall_retriever(memory, scope, options)
    docs = await retriever.ainvoke(query, config, **call)
    return render_documents(docs, max_tokens=max_tokens), len(docs)


def recall_block(
    memory: EpisodicMemory,
    scope: MemoryScope,
    query: str,
    *,
    options: Mapping[str, Any],
    max_tokens: int | None,
    config: RunnableConfig | None = None,
) -> str:
    """The block of `recall_answer` alone."""
    return recall_answer(
        memory, scope, query, options=options, max_tokens=max_tokens, config=config
    )[0]


async def arecall_block(
    memory: EpisodicMemory,
    scope: MemoryScope,
    query: str,
    *,
    options: Mapping[str, Any],
    max_tokens: int | None,
    config: RunnableConfig | None = None,
) -> str:
    """The async twin of `recall_block`."""
    block, _ = await arecall_answer(
        memory, scope, query, options=options, max_tokens=max_tokens, config=config
    )
    return block
