"""`EpisodicMemoryBlock`: episodex conversation episodes as a LlamaIndex memory block."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.memory.episodex._checks import (
    check_recall_options,
    configuration_errors,
    require_id,
)
from llama_index.memory.episodex._messages import (
    exchange_text,
    latest_user_text,
    message_text,
    session_of,
    tools_called,
)
from pydantic import Field, PrivateAttr, field_validator

from episodex import (
    DEFAULT_ENCODING,
    ConfigurationError,
    EpisodicMemory,
    LLMCallable,
    ValidationError,
    format_recall,
    token_counter,
)

__all__ = ["SUMMARY_PROMPT", "EpisodicMemoryBlock"]

logger = logging.getLogger(__name__)

SUMMARY_PROMPT = (
    "Summarise this stretch of a conversation between a user and an assistant in one or two "
    "sentences: what the user wanted and what was done or decided. Answer with the summary "
    "only.\n\n{exchange}"
)
"""What the optional summariser is asked; `{exchange}` is replaced by the messages."""

# Renders kept for `atruncate`: a few, in case several sessions share one block.
_KEPT_RENDERS = 16


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary and marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


class EpisodicMemoryBlock(BaseMemoryBlock[str]):
    """Long-term episodic memory for LlamaIndex agents, as a `Memory` block.

    When `Memory` flushes messages out of short-term memory, the block records them as one
    episode of the conversation (the session id is the conversation id). When `Memory` is read,
    the block recalls the episodes that best match the latest user message, from this
    conversation and from the user's previous ones, and returns them as a labelled
    `<recalled_episodes>` block, which `Memory` places under `<memory><episodes>`. If `Memory`
    is over its token limit, `atruncate` drops the lowest-ranked episodes first.

    Setup:
        `pip install llama-index-memory-episodex`: the embedded store and the embedding model
        come with it, nothing is downloaded.

    Instantiate:
        ```python
        from episodex import EpisodicMemory
        from llama_index.core.memory import Memory
        from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer

        episodes = EpisodicMemory(path="./memory")
        block = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id="support")
        memory = Memory.from_defaults(
            session_id="chat-42", memory_blocks=[block], tokenizer_fn=offline_tokenizer()
        )
        ```

    Use:
        Pass `memory=memory` to `agent.run(...)` (a `FunctionAgent`, `ReActAgent` or
        `AgentWorkflow`); everything else happens inside `Memory`.

    Async:
        Both sides are async (`aget`/`aput`); embedding and search run in a worker thread.
    """

    name: str = Field(default="episodes")
    """The tag the block gets inside `<memory>`."""
    priority: int = Field(default=1)
    """Over its token limit, `Memory` shrinks priority 1 blocks first, then 2, ...; 0: never."""
    memory: EpisodicMemory = Field(exclude=True)
    """The episodic memory that stores and recalls the episodes."""
    user_id: str
    """The end user; recall never reaches another user's episodes."""
    agent_id: str
    """The agent the user talks to."""
    conversation_id: str | None = None
    """Record and recall under this conversation id instead of the `Memory` session id."""
    previous_conversation_limit: int = Field(default=5, ge=0)
    """How many episodes of earlier conversations to recall."""
    same_conversation_limit: int = Field(default=3, ge=0)
    """How many earlier episodes of the current conversation to recall."""
    recall_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """More `EpisodicMemory.recall` options: stream weights, `rrf_k`, `stage1_limit`."""
    max_tokens: int | None = Field(default=None, ge=1)
    """A token budget for the block; the lowest-ranked episodes are left out to fit it."""
    encoding: str | Callable[[str], int] = Field(default=DEFAULT_ENCODING, exclude=True)
    """How tokens are counted: a tiktoken encoding name (offline cl100k) or a counter."""
    summarizer: LLMCallable | None = Field(default=None, exclude=True)
    """An async `prompt -> text` callable (see `from_llama_index`) writing the short summary.

    Without it the short summary is an extract of what the user said.
    """
    short_summary_chars: int = Field(default=300, ge=20)
    """Longest short summary kept, in characters."""
    long_summary_chars: int = Field(default=4000, ge=100)
    """Longest long summary (the exchange itself) kept, in characters."""

    _renders: OrderedDict[str, dict[str, list[dict[str, Any]]]] = PrivateAttr(
        default_factory=OrderedDict[str, dict[str, list[dict[str, Any]]]]
    )

    def __init__(self, /, **data: Any) -> None:
        with configuration_errors(type(self).__name__):
            super().__init__(**data)

    @field_validator("user_id", "agent_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    @field_validator("recall_options")
    @classmethod
    def _recall_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            return check_recall_options(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("conversation_id")
    @classmethod
    def _optional_id(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a non-empty string or None")
        return value

    # -- reading -----------------------------------------------------------------------------

    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        """Recall the episodes matching the latest user message; `""` when none match."""
        query = latest_user_text(messages)
        if not query:
            return ""
        conversation = self.conversation_id or session_id
        result = await self.memory.recall(
            user_id=self.user_id,
            agent_id=self.agent_id,
            query=query,
            conversation_id=conversation,
            previous_conversation_limit=self.previous_conversation_limit,
            same_conversation_limit=self.same_conversation_limit,
            **self.recall_options,
        )
        block = format_recall(result, max_tokens=self.max_tokens, encoding=self.encoding)
        self._keep(block, result)
        return block

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the lowest-ranked episodes until the block is `tokens_to_truncate` shorter.

        Counts with this block's `encoding`; returns None when nothing fits, and also for a
        text this block did not render lately (then `Memory` drops it whole, its default).
        """
        # Memory also asks blocks that returned nothing, passing them an empty list.
        result = self._renders.get(content) if isinstance(content, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
        if result is None:
            return None
        budget = token_counter(self.encoding)(content) - max(int(tokens_to_truncate), 0)
        if budget <= 0:
            return None
        block = format_recall(result, max_tokens=budget, encoding=self.encoding)
        if not block:
            return None
        self._keep(block, result)
        return block

    def _keep(self, block: str, result: dict[str, list[dict[str, Any]]]) -> None:
        if not block:
            return
        self._renders[block] = result
        self._renders.move_to_end(block)
        while len(self._renders) > _KEPT_RENDERS:
            self._renders.popitem(last=False)

    # -- writing -----------------------------------------------------------------------------

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Record the messages (flushed from short-term memory) as one episode.

        Raises:
            ValidationError: No conversation id: neither `conversation_id` is set nor do the
                messages carry the session id `Memory` stamps on them.
        """
        exchange = exchange_text(messages)
        if not exchange:
            return  # only system prompts, images or empty messages: nothing to remember
        conversation = self.conversation_id or session_of(messages)
        if conversation is None:
            raise ValidationError(
                "EpisodicMemoryBlock cannot tell which conversation these messages belong to: "
                "set conversation_id on the block, or put them through Memory (which passes its "
                "session_id) or aput(..., session_id=...)"
            )
        require_id("conversation_id", conversation)
        await self.memory.memorize(
            short_summary=await self._short_summary(messages, exchange),
            long_summary=_clip(exchange, self.long_summary_chars),
            user_id=self.user_id,
            agent_id=self.agent_id,
            conversation_id=conversation,
            tools_invoked=tools_called(messages),
            metadata={"source": "llama_index", "messages": len(messages)},
        )

    async def _short_summary(self, messages: list[ChatMessage], exchange: str) -> str:
        if self.summarizer is not None:
            try:
                text = (await self.summarizer(SUMMARY_PROMPT.format(exchange=exchange))).strip()
            except Exception:
                # The messages have already left short-term memory: record them with the
                # extract rather than lose them to a failing model.
                logger.warning(
                    "summarizer failed; recording the episode with an extract", exc_info=True
                )
            else:
                if text:
                    return _clip(text, self.short_summary_chars)
        said = [message_text(m) for m in messages if m.role == MessageRole.USER]
        extract = " / ".join(t for t in said if t) or exchange
        return _clip(" ".join(extract.split()), self.short_summary_chars)
