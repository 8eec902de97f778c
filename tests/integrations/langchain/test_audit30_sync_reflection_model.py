"""A plain (synchronous) `prompt -> text` function as the middleware's `reflection_model`.

The core takes a plain function as its LLM (called in a worker thread), and the middleware
took "an async function". It awaited what `reflection_model` returned, so a plain
function's text raised a TypeError on every run, logged as a failed reflection, and every
episode was recorded with the plain summaries: the function's summaries never reached the
store. A plain function is now called in a worker thread and its text used; async functions,
functions returning an awaitable and LangChain models work as before.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Awaitable
from typing import Any, Literal

import pytest
from episodex import ConfigurationError
from episodex import EpisodicMemory as Episodes
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_episodex import EpisodicMemoryMiddleware
from lc_fakes import RecordingChatModel

SUMMARY = "User asked where order 1234 is.\nThe agent said it shipped on Monday."


def _model() -> RecordingChatModel:
    return RecordingChatModel(responses=[AIMessage("Your order 1234 shipped on Monday.")])


def _recorded(memory: Episodes, user: str) -> dict[str, Any]:
    [episode] = memory.store.read_recent(5, user_id=user, agent_id="support")
    return episode


async def _run(
    memory: Episodes, reflection_model: Any, how: Literal["invoke", "ainvoke"]
) -> dict[str, Any]:
    user = f"u-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", user_id=user, reflection_model=reflection_model
    )
    agent = create_agent(_model(), middleware=[middleware])
    request: Any = {"messages": [HumanMessage("Where is my order 1234?")]}
    if how == "invoke":
        out = agent.invoke(request)
    else:
        out = await agent.ainvoke(request)
    assert out["messages"][-1].text == "Your order 1234 shipped on Monday."
    return _recorded(memory, user)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_a_plain_function_writes_the_summaries(
    memory: Episodes, how: Literal["invoke", "ainvoke"], caplog: pytest.LogCaptureFixture
) -> None:
    prompts: list[str] = []
    threads: list[threading.Thread] = []

    def reflect(prompt: str) -> str:
        prompts.append(prompt)
        threads.append(threading.current_thread())
        return SUMMARY

    with caplog.at_level(logging.WARNING, logger="langchain_episodex"):
        episode = await _run(memory, reflect, how)
    assert episode["short_summary_text"] == "User asked where order 1234 is."
    assert episode["long_summary_text"] == "The agent said it shipped on Monday."
    [prompt] = prompts
    assert "user: Where is my order 1234?" in prompt
    assert "reflection failed" not in caplog.text
    if how == "ainvoke":
        # A plain function's model call runs off the event loop, so it never stalls it.
        assert threads[0] is not threading.main_thread()


async def test_an_async_function_and_a_function_returning_an_awaitable_still_work(
    memory: Episodes,
) -> None:
    async def reflect(prompt: str) -> str:
        return SUMMARY

    def handing_back(prompt: str) -> Awaitable[str]:
        return reflect(prompt)

    for given in (reflect, handing_back):
        episode = await _run(memory, given, "ainvoke")
        assert episode["short_summary_text"] == "User asked where order 1234 is."


async def test_a_langchain_model_still_goes_through_from_langchain(memory: Episodes) -> None:
    reflector = RecordingChatModel(responses=[AIMessage(SUMMARY)])
    episode = await _run(memory, reflector, "invoke")
    assert episode["long_summary_text"] == "The agent said it shipped on Monday."
    assert "user: Where is my order 1234?" in reflector.prompt_text()


async def test_an_answer_that_is_no_text_keeps_the_plain_summaries_and_says_why(
    memory: Episodes, caplog: pytest.LogCaptureFixture
) -> None:
    def reflect(prompt: str) -> object:
        return AIMessage(SUMMARY)  # the model's message, not its text

    with caplog.at_level(logging.WARNING, logger="langchain_episodex"):
        episode = await _run(memory, reflect, "ainvoke")
    assert episode["short_summary_text"] == "Where is my order 1234?"
    assert "reflection failed" in caplog.text and "AIMessage" in caplog.text


def test_what_is_no_model_and_no_function_is_refused_naming_both_kinds(memory: Episodes) -> None:
    with pytest.raises(ConfigurationError, match=r"LangChain model or a function .*async or plain"):
        EpisodicMemoryMiddleware(memory, agent_id="support", reflection_model="gpt-4o")  # pyright: ignore[reportArgumentType]
