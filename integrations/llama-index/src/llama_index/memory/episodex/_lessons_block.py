"""`LessonsMemoryBlock`: REPEAT/AVOID step lessons of earlier attempts as a memory block."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, runtime_checkable
from xml.sax.saxutils import escape

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.memory.episodex._checks import configuration_errors
from llama_index.memory.episodex._messages import (
    check_messages,
    latest_user_text,
    readable,
    readable_page,
)
from pydantic import ConfigDict, Field

from episodex import SyncStepLessonMemory, ValidationError

__all__ = ["LessonSource", "LessonsMemoryBlock"]

logger = logging.getLogger(__name__)


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
            return escape(text)
        except Exception:
            # `Memory.aget` runs before every LLM call: an error here would end the agent's run.
            logger.warning("lesson retrieval failed; answering without lessons", exc_info=True)
            return ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Chat messages are not lessons: record steps through the lesson memory instead."""
