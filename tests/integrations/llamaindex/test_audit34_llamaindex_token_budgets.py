"""Token budgets of the LlamaIndex blocks: the lessons block has one, and both count as `Memory`.

`LessonsMemoryBlock` had no budget and no `atruncate`: a long lesson list went into every
prompt whole, and a `Memory` over its token limit dropped the whole block (LlamaIndex's
default), the best lessons with the worst. It now takes `max_tokens` and shrinks lesson by
lesson, lowest-ranked first.

Both blocks counted tokens with cl100k only, while `Memory` asks a block to shrink by tokens
of its own `tokenizer_fn`: with any other tokenizer the block cut too little and `Memory`
dropped it whole (or it cut too much). A tokenizer (`text -> list`, what `Memory` takes) is
now accepted as the block's `encoding`; before, it failed every recall (the block empty).
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, LessonsMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

HEADER = (
    "# Lessons From Previous Attempt\n"
    "These are results from a PREVIOUS attempt at this task.\n"
    "- REPEAT: actions that worked before — do them again now\n"
    "- AVOID: mistakes from before — do NOT repeat them"
)
LESSONS = (
    HEADER
    + "\n"
    + "\n".join(
        f"{n}. AVOID: [/tickets/{n} 80%] click: 'button {n}'\n   This failed: the page {n} froze"
        for n in range(1, 41)
    )
)


class _Lessons:
    """A lesson source (`LessonSource`) giving a long block, best lesson first."""

    def lessons_block(self, current_env: Any, current_state: str) -> str:
        return LESSONS


def _characters(text: str) -> list[str]:
    """A tokenizer that is not cl100k: one token per character."""
    return list(text)


async def test_the_lessons_block_keeps_the_best_lessons_within_max_tokens() -> None:
    count = offline_tokenizer()
    block = LessonsMemoryBlock(
        lessons=_Lessons(), current_env={"url": "https://app"}, max_tokens=150
    )
    text = await block.aget([ChatMessage(role="user", content="raise the priority")])
    assert len(count(text)) <= 150
    assert "1. AVOID" in text and "2. AVOID" in text
    assert "40. AVOID" not in text
    assert text.startswith("# Lessons From Previous Attempt")


async def test_memory_over_its_limit_shrinks_the_lessons_block_instead_of_dropping_it(
    chat_engine: AsyncEngine,
) -> None:
    # Priority 0 (LlamaIndex's default) is never shrunk: 1 lets Memory shrink it.
    block = LessonsMemoryBlock(lessons=_Lessons(), current_env={"url": "https://app"}, priority=1)
    memory = Memory.from_defaults(
        session_id="s1",
        memory_blocks=[block],
        token_limit=400,
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    await memory.aput(ChatMessage(role="user", content="raise the priority"))
    prompt = "\n".join(str(m.content) for m in await memory.aget())
    assert "1. AVOID" in prompt
    assert "40. AVOID" not in prompt


async def test_the_episodes_block_shrinks_by_the_tokens_of_memorys_tokenizer(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    for n in range(8):
        await memory.memorize(
            short_summary=f"Refund {n} for order 44{n}",
            long_summary=f"The parcel {n} with order 44{n} arrived broken; a refund was issued.",
            user_id=user,
            agent_id="support",
            conversation_id=f"old-{n}",
        )
    block = EpisodicMemoryBlock(
        memory=memory,
        user_id=user,
        agent_id="support",
        encoding=_characters,
    )
    chat = Memory.from_defaults(
        session_id="now",
        memory_blocks=[block],
        token_limit=700,
        tokenizer_fn=_characters,
        async_engine=chat_engine,
    )
    await chat.aput(ChatMessage(role="user", content="Where is my refund for the broken parcel?"))
    prompt = "\n".join(str(m.content) for m in await chat.aget())
    # Shrunk to fit, not dropped whole: some episodes are still shown.
    assert "<recalled_episodes>" in prompt
    assert "Refund" in prompt
    # Memory's limit leaves out its own <memory> template around the blocks.
    assert 1 <= prompt.count("<episode id=") < 8
    assert block.stats().recall_failures == 0
