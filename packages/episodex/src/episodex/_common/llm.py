"""The one shape an LLM takes inside episodex: a function from prompt to text, async or not.

Reflection, lesson grading and summaries only ever need "send this prompt, get text back",
so the core asks for nothing more. Framework adapters (LangChain, LlamaIndex) turn their
chat models into an `LLMCallable`; a plain coroutine function works as well::

    async def llm(prompt: str) -> str:
        return "Check the units before converting."

A plain function (`def llm(prompt) -> str`) works too: `ask` calls it in a worker thread.
The package exports `ask` as `episodex.ask_llm`, so the adapters' own model options
(`reflection_model=`, `summarizer=`) take the same two kinds of function.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from episodex._common.errors import ConfigurationError

LLMCallable: TypeAlias = Callable[[str], Awaitable[str]]
"""An async callable that takes a prompt and returns the model's text answer."""

AnyLLM: TypeAlias = LLMCallable | Callable[[str], str]
"""What a memory takes as its model: an `LLMCallable`, or a plain function from prompt to text."""

__all__ = ["AnyLLM", "LLMCallable", "ask", "require_llm"]


def require_llm(llm: AnyLLM, name: str = "llm") -> AnyLLM:
    """`llm` if it can be called with a prompt, else `ConfigurationError` saying what to pass.

    A framework's model object (LangChain's `invoke`/`ainvoke`, LlamaIndex's `complete`) is
    not callable itself; the message names the adapters' wrappers.
    """
    given: object = llm  # callers may pass anything
    if not callable(given):
        raise ConfigurationError(
            f"{name} must be a function from prompt to text (async, or plain: called in a "
            f"worker thread), got {type(llm).__name__}; wrap a LangChain model with "
            "langchain_episodex.from_langchain(model), a LlamaIndex LLM with "
            "llama_index.memory.episodex.from_llama_index(llm)"
        )
    return llm


def _is_async(llm: AnyLLM) -> bool:
    """Whether calling `llm` starts a coroutine: an async function or an async `__call__`."""
    return inspect.iscoroutinefunction(llm) or inspect.iscoroutinefunction(type(llm).__call__)


async def ask(llm: AnyLLM, prompt: str) -> object:
    """The model's answer to `prompt` (checked by the caller: a model may answer anything).

    An async function is awaited. Any other callable runs in a worker thread, so a plain
    function's model call never stalls the event loop; what it returns is awaited when it is
    awaitable (a function that hands back a coroutine, such as `lambda p: model.ainvoke(p)`).
    """
    if _is_async(llm):
        return await llm(prompt)  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType]
    answer: object = await asyncio.to_thread(llm, prompt)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer
