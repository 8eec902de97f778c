"""`from_langchain`: any LangChain chat model as the core's async `prompt -> text` callable."""

from __future__ import annotations

from typing import Any

from episodex import ConfigurationError, LLMCallable
from langchain_core.language_models import BaseLanguageModel

from langchain_episodex._summaries import message_text

__all__ = ["from_langchain"]

# LangGraph's `TAG_NOSTREAM` (as a string: langgraph is an optional extra). A call this tag
# marks is traced as before but left out of `stream_mode="messages"`: the core's prompts
# (an episode's summaries, a lesson's grade) are memory's own work, not the agent's answer,
# and a chat UI streaming an agent's messages would show them to the user as its words.
_NOT_STREAMED = "nostream"


def from_langchain(model: BaseLanguageModel[Any]) -> LLMCallable:
    """Turn a LangChain chat model (or LLM) into an episodex `LLMCallable`.

    The core only ever needs "send this prompt, get text back" (reflection, lesson grading,
    summaries); this adapts any LangChain model to that shape. The call is tagged `nostream`:
    made inside a LangGraph run (an agent's `after_agent` step), it is traced but never
    streamed to the user as the agent's words (`stream_mode="messages"`).

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
        return message_text(await model.ainvoke(prompt, config={"tags": [_NOT_STREAMED]}))

    call.__name__ = f"from_langchain({type(model).__name__})"
    return call
