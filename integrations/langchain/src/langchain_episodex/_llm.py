"""`from_langchain`: any LangChain chat model as the core's async `prompt -> text` callable."""

from __future__ import annotations

from typing import Any

from episodex import ConfigurationError, LLMCallable
from langchain_core.language_models import BaseLanguageModel

from langchain_episodex._summaries import message_text

__all__ = ["from_langchain"]


def from_langchain(model: BaseLanguageModel[Any]) -> LLMCallable:
    """Turn a LangChain chat model (or LLM) into an episodex `LLMCallable`.

    The core only ever needs "send this prompt, get text back" (reflection, lesson grading,
    summaries); this adapts any LangChain model to that shape.

    ```python
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_episodex import from_langchain

    llm = from_langchain(GenericFakeChatModel(messages=iter([AIMessage("Paris")])))
    answer = await llm("Capital of France?")   # "Paris"
    ```

    Args:
        model: A `BaseChatModel` or `BaseLLM`.

    Returns:
        An async function from prompt to the model's text answer.

    Raises:
        ConfigurationError: `model` is not a LangChain language model.
    """
    if not isinstance(model, BaseLanguageModel):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            f"from_langchain needs a LangChain chat model or LLM, got {type(model).__name__}"
        )

    async def call(prompt: str) -> str:
        return message_text(await model.ainvoke(prompt))

    call.__name__ = f"from_langchain({type(model).__name__})"
    return call
