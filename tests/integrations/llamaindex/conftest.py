"""Shared pieces of the LlamaIndex adapter tests: one embedded store, a mock LLM that records."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ChatResponseAsyncGen
from llama_index.core.llms import MockFunctionCallingLLM
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


class RecordingLLM(MockFunctionCallingLLM):
    """`MockFunctionCallingLLM` that keeps every message list it is sent and answers `reply`."""

    calls: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)
    reply: str = "Noted."

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.response_generator = lambda messages, **_: ChatMessage(  # pyright: ignore[reportUnknownLambdaType]
            role="assistant", content=self.reply
        )

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.calls.append([m.model_copy(deep=True) for m in messages])
        return await super().achat(messages, **kwargs)

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        self.calls.append([m.model_copy(deep=True) for m in messages])
        return await super().astream_chat(messages, **kwargs)

    def last_input(self) -> str:
        """Everything the LLM was sent on its last call, as `role: text` lines."""
        return "\n".join(f"{m.role.value}: {m.content}" for m in self.calls[-1])


@pytest.fixture
def make_llm() -> type[RecordingLLM]:
    """The recording mock LLM class: call it for a fresh instance."""
    return RecordingLLM


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EpisodicMemory]:
    """One embedded Qdrant Edge store per module; tests keep apart with their own user ids."""
    path: Path = tmp_path_factory.mktemp("episodes")
    mem = EpisodicMemory(path=path)
    yield mem
    mem.close()


@pytest.fixture
def user() -> str:
    """A user id no other test uses."""
    return f"user-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def chat_engine() -> AsyncIterator[AsyncEngine]:
    """The in-memory SQLite of LlamaIndex's short-term memory, closed after the test.

    `Memory.from_defaults()` opens its own and never closes it (a ResourceWarning at exit).
    """
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield engine
    await engine.dispose()
