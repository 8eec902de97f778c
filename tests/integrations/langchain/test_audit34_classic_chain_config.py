"""The ids a classic chain's own config carries never reach its memory; the error says so.

`Chain.invoke(x, config=...)` of `langchain_classic` keeps the config to itself: the memory's
`load_memory_variables` gets the inputs only, and no run config is current. A memory made
without `user_id` then raised `ConfigurationError` telling the user to put the id in the
config's "configurable", which is where they had put it. The error now says what works: the
ids given to the memory, or the config of a runnable the chain is called inside; and that
path is tested, two users at once included, each call's exchange stored under its own user.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import ConfigurationError
from episodex import EpisodicMemory as Episodes
from langchain_classic.chains import ConversationChain
from langchain_classic.chains.base import Chain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_episodex import EpisodicConversationMemory
from lc_fakes import RecordingChatModel

AGENT = "assistant"


@pytest.fixture(autouse=True)
def _classic_chains_are_deprecated() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)
        yield


def _chain(memory: Episodes) -> Chain:
    episodic = EpisodicConversationMemory(memory=memory, agent_id=AGENT)
    model = RecordingChatModel(responses=[AIMessage("Noted.")] * 8, received=[])
    return ConversationChain(llm=model, memory=episodic)


def _config(user: str) -> RunnableConfig:
    return {"configurable": {"user_id": user}}


async def test_the_error_says_a_classic_chains_config_does_not_reach_its_memory(
    memory: Episodes,
) -> None:
    chain = _chain(memory)
    user = f"user-{uuid.uuid4().hex}"
    for call in (chain.invoke, chain.ainvoke):
        with pytest.raises(ConfigurationError) as raised:
            result: Any = call({"input": "I am allergic to peanuts."}, config=_config(user))
            if not isinstance(result, dict):
                await result
        message = str(raised.value)
        assert "does not hand its own config" in message
        assert "EpisodicConversationMemory(user_id=" in message
        assert "RunnableLambda" in message
    assert memory.store.count(user_id=user, agent_id=AGENT) == 0


async def test_ids_in_the_config_of_a_runnable_calling_the_chain_reach_the_memory(
    memory: Episodes,
) -> None:
    chain = _chain(memory)

    def ask(question: dict[str, Any]) -> dict[str, Any]:
        return chain.invoke(question)

    async def aask(question: dict[str, Any]) -> dict[str, Any]:
        return await chain.ainvoke(question)

    runnable = RunnableLambda(ask, afunc=aask)
    users = [f"user-{uuid.uuid4().hex}" for _ in range(2)]
    questions = [{"input": f"My seat is {n}A."} for n in range(4)]
    configs = [_config(users[n % 2]) for n in range(4)]
    await runnable.abatch(questions, config=configs)
    runnable.batch(questions, config=configs)
    for n, user in enumerate(users):
        stored = memory.store.read_recent(10, user_id=user, agent_id=AGENT)
        texts = sorted(str(episode["long_summary_text"]) for episode in stored)
        # Each user holds exactly their own two questions, asked twice (abatch, then batch).
        mine = [f"user: My seat is {k}A.\nassistant: Noted." for k in (n, n + 2)]
        assert texts == sorted(mine * 2)
