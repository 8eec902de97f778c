"""A plain (synchronous) `prompt -> text` function as the block's `summarizer`.

The core takes a plain function as its LLM (called in a worker thread), and the block's
field accepted any callable. It awaited what `summarizer` returned, so a plain function's
text raised a TypeError on every episode, logged as a failed summarizer, and every episode
was stored with the extract: the function's summaries never reached the store. A plain
function is now called in a worker thread and its text used; async functions, functions
returning an awaitable and `from_llama_index` work as before, and a LlamaIndex LLM given
as it is gets a message naming `from_llama_index`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, from_llama_index, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

SUMMARY = "The user asked for a refund of order 1234 and got it."
EXCHANGE = [
    ChatMessage(role="user", content="Refund order 1234 please."),
    ChatMessage(role="assistant", content="Done, order 1234 is refunded."),
]


async def _recorded(memory: EpisodicMemory, user: str) -> dict[str, Any]:
    [episode] = await memory.read_recent(5, user_id=user, agent_id="support")
    return episode


async def test_a_plain_function_writes_the_short_summary(
    memory: EpisodicMemory, user: str, caplog: pytest.LogCaptureFixture
) -> None:
    threads: list[threading.Thread] = []

    def summarize(prompt: str) -> str:
        threads.append(threading.current_thread())
        assert "Refund order 1234 please." in prompt
        return f"  {SUMMARY}  "

    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id="support", summarizer=summarize
    )
    with caplog.at_level(logging.WARNING):
        await block.aput([m.model_copy() for m in EXCHANGE], session_id="s1")
    assert (await _recorded(memory, user))["short_summary_text"] == SUMMARY
    assert "summarizer failed" not in caplog.text
    # Called off the event loop: a plain function's model call never stalls it.
    [thread] = threads
    assert thread is not threading.main_thread()


async def test_a_plain_function_summarises_what_memory_records(
    memory: EpisodicMemory, user: str, chat_engine: AsyncEngine
) -> None:
    def summarize(prompt: str) -> str:
        return SUMMARY

    block = EpisodicMemoryBlock(
        memory=memory, user_id=user, agent_id="support", summarizer=summarize
    )
    chat = Memory.from_defaults(
        session_id="s2",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        async_engine=chat_engine,
    )
    await chat.aput_messages([m.model_copy() for m in EXCHANGE])
    await chat.aput(ChatMessage(role="user", content="And order 99?"))
    await chat.aget()  # what an agent does before answering: the finished exchange is recorded
    episode = await _recorded(memory, user)
    assert episode["short_summary_text"] == SUMMARY
    assert episode["conversation_id"] == "s2"


async def test_async_functions_awaitables_and_from_llama_index_still_work(
    memory: EpisodicMemory, user: str, make_llm: Any
) -> None:
    async def summarize(prompt: str) -> str:
        return SUMMARY

    def handing_back(prompt: str) -> Awaitable[str]:
        return summarize(prompt)

    model = from_llama_index(make_llm(reply=SUMMARY))
    for index, given in enumerate((summarize, handing_back, model)):
        block = EpisodicMemoryBlock(
            memory=memory, user_id=f"{user}-{index}", agent_id="support", summarizer=given
        )
        await block.aput([m.model_copy() for m in EXCHANGE], session_id="s3")
        assert (await _recorded(memory, f"{user}-{index}"))["short_summary_text"] == SUMMARY


def test_a_llama_index_llm_given_as_it_is_names_from_llama_index(memory: EpisodicMemory) -> None:
    with pytest.raises(ConfigurationError, match=r"from_llama_index\(llm\)"):
        EpisodicMemoryBlock(memory=memory, user_id="u1", agent_id="support", summarizer=MockLLM())
