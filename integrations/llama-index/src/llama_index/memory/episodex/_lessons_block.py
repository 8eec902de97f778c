"""`LessonsMemoryBlock`: REPEAT/AVOID step lessons of earlier attempts as a memory block."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable
from xml.sax.saxutils import escape

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.memory.episodex._checks import configuration_errors, tokens_to_cut
from llama_index.memory.episodex._llm import Encoding, counter_of
from llama_index.memory.episodex._messages import (
    check_messages,
    latest_user_text,
    readable,
    readable_page,
)
from pydantic import ConfigDict, Field

from episodex import DEFAULT_ENCODING, SyncStepLessonMemory, ValidationError

__all__ = ["LessonSource", "LessonsMemoryBlock"]

logger = logging.getLogger(__name__)

# A lesson starts a line with its number (`2. AVOID: ...`); its other lines are indented.
_LESSON_START = re.compile(r"^\d+\. ", re.MULTILINE)


def _fit(text: str, budget: int, count: Callable[[str], int]) -> str:
    """The block with its last (lowest-ranked) lessons left out until it fits `budget` tokens.

    `""` when not even the first lesson fits; a text without numbered lessons fits whole or
    not at all.
    """
    if count(text) <= budget:
        return text
    starts = [m.start() for m in _LESSON_START.finditer(text)]
    # Keep the head and the first n lessons; the fewest left out first.
    for end in reversed(starts[1:]):
        kept = text[:end].rstrip("\n")
        if count(kept) <= budget:
            return kept
    return ""


@runtime_checkable
class LessonSource(Protocol):
    """What the block reads lessons from: `episodex.StepLessonMemory` is one.

    So is `episodex.SyncStepLessonMemory`: a synchronous `lessons_block` is called in the
    thread that reads `Memory` (where its attempt in progress was started).
    """

    def lessons_block(self, current_env: Any, current_state: str) -> Awaitable[str] | str:
        """The REPEAT/AVOID block for this page and agent state, `""` when there is none."""
        ...


class LessonsMemoryBlock(BaseMemoryBlock[str]):
    """Lessons from earlier attempts at the same task, for agents that retry it.

    Each time `Memory` is read, the block asks the step-lesson memory for the graded steps of
    earlier attempts whose page looks like the current one, and returns the
    `# Lessons From Previous Attempt` block (REPEAT what worked, AVOID what failed), which
    `Memory` places under `<memory><lessons>`, with `<`, `>` and `&` escaped so no stored
    text can close those tags. The first attempt gets nothing.

    The current page is `current_env` (set it on the block before each step, or pass
    `current_env=` to `Memory.aget`); the agent's current state is the latest user message
    unless `current_state=` is passed. Steps are recorded and graded through the step-lesson
    memory itself (`record_step_start`, `end_episode`), not from chat messages, so the block
    takes nothing from short-term memory. A failing lesson memory is logged and gives no
    block, so the agent still answers.

    Setup:
        `pip install llama-index-memory-episodex`.

    Instantiate:
        ```python
        from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory
        from llama_index.core.memory import Memory
        from llama_index.memory.episodex import LessonsMemoryBlock, offline_tokenizer

        lessons = StepLessonMemory.from_memory(
            EpisodicMemory(path="./memory"), grader=ProgrammaticGrader(expected_actions=["click('12')"])
        )
        block = LessonsMemoryBlock(lessons=lessons)
        ```

    Use (async), on each attempt:
        ```python
        await lessons.init_episode("ticket-42", user_id="u1", agent_id="web", task="...")
        block.current_env = {"url": "https://app/tickets", "elements": ["[12] button 'Priority'"]}
        memory = Memory.from_defaults(memory_blocks=[block], tokenizer_fn=offline_tokenizer())
        ```
    """

    # A misspelt option (`deffered=True`, `max_tokenz=5`) was dropped without a word, the block
    # then running without it: refused like any other bad option (`ConfigurationError`).
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str = Field(default="lessons")
    """The tag the block gets inside `<memory>`."""
    accept_short_term_memory: bool = Field(default=False)
    """Lessons come from graded steps, not from flushed chat messages."""
    lessons: LessonSource | SyncStepLessonMemory = Field(exclude=True)
    """The step-lesson memory (`episodex.StepLessonMemory`), with its attempt initialised."""
    current_env: Any = Field(default=None, exclude=True)
    """The page the agent sees now (`EnvState` or a mapping of its fields); None: no lessons."""
    max_tokens: int | None = Field(default=None, ge=1)
    """A token budget for the block; the lowest-ranked lessons are left out to fit it (none
    fits: no block). None: no budget, though `Memory` over its token limit still shrinks
    the block lesson by lesson (`atruncate`)."""
    encoding: Encoding = Field(default=DEFAULT_ENCODING, exclude=True)
    """How tokens are counted: a tiktoken encoding name (offline cl100k), a counter
    (`text -> int`) or a tokenizer (`text -> list`), e.g. the `tokenizer_fn` given to `Memory`
    when it is not cl100k."""

    def __init__(self, /, **data: Any) -> None:
        with configuration_errors(type(self).__name__):
            super().__init__(**data)

    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        *,
        current_env: Any = None,
        current_state: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        """The lessons block for the current page and state; `""` without a page."""
        # The caller's own mistakes raise: below, every error is read as a failing memory.
        if messages is not None:
            check_messages(messages, "LessonsMemoryBlock.aget")
        if current_state is not None and not isinstance(current_state, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"current_state must be a string or None, got {current_state!r:.80}"
            )
        env = current_env if current_env is not None else self.current_env
        if env is None or (isinstance(env, Mapping) and not env):
            return ""
        # Page and state are read as the episodes block reads a query: a half character (a
        # lone surrogate) as U+FFFD, or the lesson memory refuses them and the step gets none.
        state = readable(current_state) if current_state is not None else latest_user_text(messages)
        try:
            block = self.lessons.lessons_block(readable_page(env), state)
            # A synchronous source (a SyncStepLessonMemory) has answered already; awaiting
            # its text would fail every read and the agent would never see a lesson.
            text = block if isinstance(block, str) else await block
            # `Memory` puts the text between `<memory><lessons>` tags: escaped, a stored text
            # (a page element, a grader's explanation) cannot close them and speak as the prompt.
            text = escape(text)
            if self.max_tokens is not None:
                text = _fit(text, self.max_tokens, counter_of(self.encoding))
            return text
        except Exception:
            # `Memory.aget` runs before every LLM call: an error here would end the agent's run.
            logger.warning("lesson retrieval failed; answering without lessons", exc_info=True)
            return ""

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the lowest-ranked lessons until the block is `tokens_to_truncate` shorter.

        Counts with this block's `encoding`; returns None when no lesson fits (then `Memory`
        drops the block).
        """
        cut = tokens_to_cut(tokens_to_truncate)
        # Memory also asks blocks that returned nothing, passing them an empty list.
        if not isinstance(content, str) or not content:  # pyright: ignore[reportUnnecessaryIsInstance]
            return None
        count = counter_of(self.encoding)
        budget = count(content) - cut
        return (_fit(content, budget, count) or None) if budget > 0 else None

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Chat messages are not lessons: record steps through the lesson memory instead."""
