"""A fake chat model that remembers what it was sent (the only fake in these tests), and a seed."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import FakeMessagesListChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import Field


class RecordingChatModel(FakeMessagesListChatModel):
    """Answers from `responses` in turn and keeps every message list it received."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def bind_tools(  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # create_agent binds its tools; the scripted answers already name the tool calls.
        bound: Runnable[LanguageModelInput, AIMessage] = self  # pyright: ignore[reportAssignmentType]
        return bound

    def prompt_text(self, call: int = -1) -> str:
        """Everything the model was sent in one call, as one string."""
        return "\n".join(str(m.text) for m in self.received[call])


class EchoChatModel(FakeMessagesListChatModel):
    """Answers every call with `answer(messages)`, whatever the order of calls (batch-safe).

    Keeps every message list it received, so tests can see what each run's model was sent.
    """

    answer: Callable[[list[BaseMessage]], BaseMessage]
    received: list[list[BaseMessage]] = Field(default_factory=list)
    responses: list[BaseMessage] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(list(messages))  # list.append is atomic: safe from batch threads
        return ChatResult(generations=[ChatGeneration(message=self.answer(list(messages)))])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # create_agent binds its tools; the answers already name the tool calls.
        bound: Runnable[LanguageModelInput, AIMessage] = self  # pyright: ignore[reportAssignmentType]
        return bound


def sent_text(messages: list[BaseMessage]) -> str:
    """Everything in one model call, as one string."""
    return "\n".join(str(m.text) for m in messages)


def seeded_user(memory: Any, agent_id: str) -> str:
    """A new user with one earlier episode: "The user prefers trains to planes."."""
    user = f"seeded-{uuid.uuid4().hex}"
    asyncio.run(
        memory.memorize(
            short_summary="The user prefers trains to planes.",
            long_summary="user: I prefer trains to planes.",
            user_id=user,
            agent_id=agent_id,
            conversation_id="earlier",
        )
    )
    return user
