"""The one shape an LLM takes inside episodex: an async function from prompt to text.

Reflection, lesson grading and summaries only ever need "send this prompt, get text back",
so the core asks for nothing more. Framework adapters (LangChain, LlamaIndex) turn their
chat models into an `LLMCallable`; a plain coroutine function works as well::

    async def llm(prompt: str) -> str:
        return "Check the units before converting."
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeAlias

LLMCallable: TypeAlias = Callable[[str], Awaitable[str]]
"""An async callable that takes a prompt and returns the model's text answer."""

__all__ = ["LLMCallable"]
