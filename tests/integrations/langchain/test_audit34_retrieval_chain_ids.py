"""A retriever without ids inside a retrieval chain: each call reads its own user's episodes.

`create_retrieval_chain` (LCEL) hands its config, `configurable` included, to the retriever,
so each call of invoke, ainvoke, batch and abatch reads the episodes of the user it names.
The classic `RetrievalQA` and `ConversationalRetrievalChain` hand their retriever callbacks
only: the ids of `chain.invoke(x, config=...)` never reach it. The retriever then raised
`ConfigurationError` telling the user to put the id in the config's "configurable", where
they had put it; the error now says what works, and the way it names (a runnable around the
chain, given that config) is tested with two users at once.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import ConfigurationError
from episodex import EpisodicMemory as Episodes
from langchain_classic.chains import (
    ConversationalRetrievalChain,
    RetrievalQA,
    create_retrieval_chain,
)
from langchain_classic.chains.base import Chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_episodex import EpisodicRetriever

AGENT = "assistant"


@pytest.fixture(autouse=True)
def _classic_chains_are_deprecated() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)
        yield


@pytest.fixture(scope="module")
def users(memory: Episodes) -> list[str]:
    """Two users, each holding one episode that names its user."""
    users = [f"user-{uuid.uuid4().hex}" for _ in range(2)]
    asyncio.run(
        memory.memorize_many(
            {
                "short_summary": f"The seat of {user} is {n}A",
                "long_summary": f"The seat of {user} is {n}A on every flight.",
                "user_id": user,
                "agent_id": AGENT,
                "conversation_id": f"c-{user}",
            }
            for n, user in enumerate(users)
        )
    )
    return users


def _config(user: str) -> RunnableConfig:
    return {"configurable": {"user_id": user}}


def _llm() -> FakeListLLM:
    return FakeListLLM(responses=["Noted."] * 16)


def _classic_chains(retriever: EpisodicRetriever) -> list[tuple[Chain, dict[str, Any]]]:
    qa = RetrievalQA.from_chain_type(llm=_llm(), retriever=retriever, return_source_documents=True)
    conversational = ConversationalRetrievalChain.from_llm(
        llm=_llm(), retriever=retriever, return_source_documents=True
    )
    return [
        (qa, {"query": "Which seat?"}),
        (conversational, {"question": "Which seat?", "chat_history": []}),
    ]


def _seats(documents: list[Any]) -> list[str]:
    return [str(document.page_content) for document in documents]


async def test_the_error_says_a_classic_retrieval_chains_config_does_not_reach_its_retriever(
    memory: Episodes, users: list[str]
) -> None:
    retriever = EpisodicRetriever(memory=memory, agent_id=AGENT)
    configs = [_config(user) for user in users]
    for chain, question in _classic_chains(retriever):
        messages: list[str] = []
        with pytest.raises(ConfigurationError) as raised:
            chain.invoke(question, config=configs[0])
        messages.append(str(raised.value))
        with pytest.raises(ConfigurationError) as raised:
            chain.batch([question, question], config=configs)
        messages.append(str(raised.value))
        with pytest.raises(ConfigurationError) as raised:
            await chain.ainvoke(question, config=configs[0])
        messages.append(str(raised.value))
        with pytest.raises(ConfigurationError) as raised:
            await chain.abatch([question, question], config=configs)
        messages.append(str(raised.value))
        for message in messages:
            assert "does not hand its own config" in message
            assert "EpisodicRetriever(user_id=" in message
            assert "create_retrieval_chain" in message
            assert "RunnableLambda" in message


async def test_create_retrieval_chain_reads_each_calls_own_users_episodes(
    memory: Episodes, users: list[str]
) -> None:
    retriever = EpisodicRetriever(memory=memory, agent_id=AGENT)
    prompt = ChatPromptTemplate.from_messages([("system", "{context}"), ("human", "{input}")])
    chain = create_retrieval_chain(retriever, create_stuff_documents_chain(_llm(), prompt))
    question = {"input": "Which seat?"}
    own = [[f"The seat of {user} is {n}A"] for n, user in enumerate(users)]
    for n, user in enumerate(users):
        assert _seats(chain.invoke(question, config=_config(user))["context"]) == own[n]
        answer = await chain.ainvoke(question, config=_config(user))
        assert _seats(answer["context"]) == own[n]
    configs = [_config(users[n % 2]) for n in range(4)]
    for answers in (
        chain.batch([question] * 4, config=configs),
        await chain.abatch([question] * 4, config=configs),
    ):
        assert [_seats(answer["context"]) for answer in answers] == [own[n % 2] for n in range(4)]


async def test_a_classic_retrieval_chain_called_from_a_runnable_reads_its_config(
    memory: Episodes, users: list[str]
) -> None:
    retriever = EpisodicRetriever(memory=memory, agent_id=AGENT)
    own = [[f"The seat of {user} is {n}A"] for n, user in enumerate(users)]
    configs = [_config(users[n % 2]) for n in range(4)]
    for chain, question in _classic_chains(retriever):

        def ask(value: dict[str, Any], chain: Chain = chain) -> dict[str, Any]:
            return chain.invoke(value)

        async def aask(value: dict[str, Any], chain: Chain = chain) -> dict[str, Any]:
            return await chain.ainvoke(value)

        runnable = RunnableLambda(ask, afunc=aask)
        for answers in (
            runnable.batch([question] * 4, config=configs),
            await runnable.abatch([question] * 4, config=configs),
        ):
            seats = [_seats(answer["source_documents"]) for answer in answers]
            assert seats == [own[n % 2] for n in range(4)]
