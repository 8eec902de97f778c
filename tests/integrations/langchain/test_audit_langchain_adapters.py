"""Trust audit of the LangChain adapter: answers survive unreadable memory, bad input is refused.

Found by the adapter audit:

- an episode that cannot be read back (a payload written by another program or an older
  version, here an out-of-range timestamp) raised `OverflowError` out of `EpisodicRetriever`,
  which caught only `EngineError` and `EmbeddingError`: a RAG chain fed by it failed and the
  user got no answer. (Since audit 30 the core leaves such an episode out of every read, so the
  chain gets the user's other episodes.)
- recall option values were checked only when recall ran: a middleware, classic memory, LCEL
  runnable or tool made with `recall_options={"rrf_k": 0}` failed every recall, logged it as
  an outage, and ran without memory for good. They now raise `ConfigurationError` when made.
- `EpisodexStore.put(..., index="text")` read the string as one-letter paths, indexed
  nothing and stored an item no query could find; `index=[5]` and a value that is not JSON
  raised `TypeError` from LangGraph's field reader before the value was checked.
- `record_exchange(tools_invoked="search")` stored the tools `s`, `e`, `a`, ... and
  `tools_invoked=[1]` raised `TypeError`.
- a retriever handed a dict or None (a chain wired without `itemgetter`) raised
  `AttributeError`; a per-call `score_threshold="high"` raised `TypeError`.
- `TaskEpisodeRetriever(search_options={"filter": {"user": "u1"}})`, the documented way to
  confine an unscoped task store to one user, returned every user's episodes when a call
  gave its own `filter`: the call's filter replaced the retriever's instead of narrowing it.
- `recall_episodes` and `create_memory_search_tool` took `max_tokens=-1` and ids the store
  refuses (600 characters), and the middleware ids only had to be non-blank: each call then
  failed inside memory and was logged as an outage (the LCEL runnable gave `""`, the tool
  "memory is unavailable") or failed every run. Now `ConfigurationError` when made.
- `EpisodicConversationMemory.save_context` logged a failed write and dropped the exchange:
  a classic chain lost every turn said while the store was down (the middleware and the
  LlamaIndex block keep them for retry). It now writes through an `EpisodeRecorder`.
- a classic chain called with a blank message got its answer from the model, then
  `save_context` raised `ValidationError` ("nothing to record") and the answer was lost; the
  exchange is now left unrecorded, as the middleware leaves such a run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    Episode,
    EpisodicMemory,
    JSONLTaskStore,
    Task,
    TaskResult,
    ValidationError,
)
from episodex.plan import Filter, Match, Point
from episodex.testing import FailingEngine, HashEmbedder
from langchain_classic.chains import ConversationChain
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_episodex import (
    EpisodexStore,
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
    EpisodicRetriever,
    TaskEpisodeRetriever,
    arecord_exchange,
    create_memory_search_tool,
    recall_episodes,
    record_exchange,
)
from langgraph.store.base import PutOp
from lc_fakes import RecordingChatModel

AGENT = "support"


@pytest.fixture
def hashed() -> Iterator[EpisodicMemory]:
    """A fresh in-RAM memory with the deterministic test embedder."""
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield memory
    memory.close()


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


async def _corrupt(memory: EpisodicMemory, user: str, **fields: Any) -> None:
    """Store one episode of `user`, then rewrite its payload as another program might have."""
    texts = ["Refund for the broken kettle", "The kettle arrived broken; the refund was issued."]
    await memory.memorize(
        short_summary=texts[0], long_summary=texts[1], user_id=user, agent_id=AGENT,
        conversation_id="old",
    )  # fmt: skip
    hits, _ = memory.engine.scroll("episodes", Filter(must=(Match("user_id", user),)), limit=1)
    (hit,) = hits
    short, long = memory.embedder.embed_documents(texts)
    point = Point(
        id=hit.id,
        dense={"short": short.tolist(), "long": long.tolist()},
        sparse={},
        payload={**hit.payload, **fields},
    )
    memory.engine.upsert("episodes", [point])


def _context(docs: list[Document]) -> str:
    return "\n".join(doc.page_content for doc in docs)


@pytest.mark.parametrize("fields", [{"timestamp_end": 1e300}, {"tools_invoked": 5}])
async def test_a_rag_chain_answers_when_an_episode_cannot_be_read_back(
    hashed: EpisodicMemory, fields: dict[str, Any]
) -> None:
    user = _user()
    await _corrupt(hashed, user, **fields)
    await hashed.memorize(
        short_summary="Kettle refund promised for Monday", long_summary="A kettle refund.",
        user_id=user, agent_id=AGENT, conversation_id="good",
    )  # fmt: skip
    retriever = EpisodicRetriever(memory=hashed, user_id=user, agent_id=AGENT)
    prompt = PromptTemplate.from_template("Context:\n{context}\nQuestion: {question}")
    model = RecordingChatModel(responses=[AIMessage("Monday."), AIMessage("Tuesday.")], received=[])
    chain = {"context": retriever | _context, "question": RunnablePassthrough()} | prompt | model
    assert (await chain.ainvoke("kettle refund?")).text == "Monday."
    assert chain.invoke("kettle refund?").text == "Tuesday."
    # The episode that cannot be read back is left out; the user's other one still reaches
    # the model (it once failed the whole retrieval, so the chain ran without memory).
    for call in (0, 1):
        assert "Kettle refund promised for Monday" in model.prompt_text(call)
        assert "Refund for the broken kettle" not in model.prompt_text(call)
    loud = EpisodicRetriever(memory=hashed, user_id=user, agent_id=AGENT, raise_on_failure=True)
    docs = await loud.ainvoke("kettle refund?")
    assert [d.page_content for d in docs] == ["Kettle refund promised for Monday"]


def test_recall_option_values_are_checked_when_each_adapter_is_made(
    hashed: EpisodicMemory,
) -> None:
    for bad in ({"rrf_k": 0}, {"bm25_weight": "high"}, {"same_conversation_limit": -1}):
        with pytest.raises(ConfigurationError):
            EpisodicMemoryMiddleware(hashed, agent_id=AGENT, recall_options=bad)
        with pytest.raises(ConfigurationError):
            EpisodicConversationMemory(
                memory=hashed, user_id="u1", agent_id=AGENT, recall_options=bad
            )
        with pytest.raises(ConfigurationError):
            recall_episodes(hashed, agent_id=AGENT, recall_options=bad)
        with pytest.raises(ConfigurationError):
            create_memory_search_tool(hashed, agent_id=AGENT, recall_options=bad)
        with pytest.raises(ConfigurationError):
            EpisodicRetriever(memory=hashed, user_id="u1", agent_id=AGENT, recall_options=bad)
        with pytest.raises(ConfigurationError):
            EpisodicRetriever(memory=hashed, user_id="u1", agent_id=AGENT, search_kwargs=bad)
    with pytest.raises(ConfigurationError, match="with_stream_ranks"):
        recall_episodes(hashed, agent_id=AGENT, recall_options={"with_stream_ranks": "no"})
    # The values recall takes still pass.
    recall_episodes(hashed, agent_id=AGENT, recall_options={"rrf_k": 5, "seen_until": None})


async def test_a_store_put_with_a_bad_index_or_value_is_refused_and_writes_nothing(
    hashed: EpisodicMemory,
) -> None:
    store = EpisodexStore(hashed, agent_id=AGENT, index={"fields": ["text"]})
    ns = ("alice", "notes")
    good = PutOp(ns, "good", {"text": "Alice is vegetarian."})
    for bad in (
        PutOp(ns, "bad", {"text": "x"}, index="text"),  # pyright: ignore[reportArgumentType]
        PutOp(ns, "bad", {"text": "x"}, index=[5]),  # pyright: ignore[reportArgumentType]
        PutOp(ns, "bad", {"text": "x", "when": object()}, index=["$"]),
    ):
        with pytest.raises(ValidationError, match="put 'bad'"):
            store.batch([good, bad])
        with pytest.raises(ValidationError, match="put 'bad'"):
            await store.abatch([good, bad])
    assert store.search(("alice",)) == []
    # A list of paths still works, and a put with index=False stays unindexed.
    store.put(ns, "good", {"text": "Alice is vegetarian."}, index=["text"])
    assert [hit.key for hit in store.search(("alice",), query="vegetarian")] == ["good"]


async def test_record_exchange_refuses_tools_that_are_not_a_list_of_names(
    hashed: EpisodicMemory,
) -> None:
    ids: dict[str, Any] = {"user_id": "u1", "agent_id": AGENT, "conversation_id": "c1"}
    for tools in ("search", [1], [""]):
        with pytest.raises(ValidationError, match="tools_invoked"):
            record_exchange(hashed, "Where is it?", "Here.", tools_invoked=tools, **ids)  # pyright: ignore[reportArgumentType]
        with pytest.raises(ValidationError, match="tools_invoked"):
            await arecord_exchange(hashed, "Where is it?", "Here.", tools_invoked=tools, **ids)  # pyright: ignore[reportArgumentType]
    assert await hashed.count(user_id="u1", agent_id=AGENT) == 0
    await arecord_exchange(hashed, "Where is it?", "Here.", tools_invoked=("search",), **ids)
    (episode,) = await hashed.read_recent(5, user_id="u1", agent_id=AGENT)
    assert episode["tools_invoked"] == ["search"]


async def test_a_retriever_refuses_a_query_that_is_not_text_or_a_bad_threshold(
    hashed: EpisodicMemory,
) -> None:
    await hashed.memorize(
        short_summary="Refund for the kettle", long_summary="Refund issued.",
        user_id="u1", agent_id=AGENT, conversation_id="c1",
    )  # fmt: skip
    retriever = EpisodicRetriever(memory=hashed, user_id="u1", agent_id=AGENT)
    for query in ({"question": "refund"}, None, 5):
        with pytest.raises(ValidationError, match="query must be a string"):
            retriever.invoke(query)  # pyright: ignore[reportArgumentType]
        with pytest.raises(ValidationError, match="query must be a string"):
            await retriever.ainvoke(query)  # pyright: ignore[reportArgumentType]
    for threshold in ("high", float("nan")):
        with pytest.raises(ValidationError, match="score_threshold"):
            await retriever.ainvoke("refund", score_threshold=threshold)
    assert len(await retriever.ainvoke("refund", score_threshold=0.0)) == 1


async def test_a_task_retrievers_user_filter_is_narrowed_by_a_call_never_replaced(
    tmp_path: Path,
) -> None:
    store = JSONLTaskStore(tmp_path, fsync=False)  # unscoped: shared by every user
    for user in ("u1", "u2"):
        task = Task(instruction=f"Convert 3 miles to km for {user}")
        result = TaskResult(task_id=task.id_, content="4.83 km")
        await store.write(Episode(task=task, result=result, metadata={"user": user, "unit": "km"}))
    retriever = TaskEpisodeRetriever(store=store, k=5, search_options={"filter": {"user": "u1"}})

    def users(docs: list[Document]) -> list[str]:
        return [doc.metadata["metadata"]["user"] for doc in docs]

    assert users(await retriever.ainvoke("convert miles to km")) == ["u1"]
    assert users(await retriever.ainvoke("convert miles to km", filter={"unit": "km"})) == ["u1"]
    assert users(retriever.invoke("convert miles to km", filter={"unit": "km"})) == ["u1"]
    assert users(await retriever.ainvoke("convert miles to km", filter={"user": "u1"})) == ["u1"]
    assert await retriever.ainvoke("convert miles to km", filter={"unit": "mi"}) == []
    with pytest.raises(ValidationError, match="only narrow"):
        await retriever.ainvoke("convert miles to km", filter={"user": "u2"})
    with pytest.raises(ValidationError, match="only narrow"):
        retriever.invoke("convert miles to km", filter={"user": "u2"})


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
async def test_a_classic_chain_keeps_the_exchanges_said_while_the_store_was_down(
    failing: tuple[EpisodicMemory, FailingEngine],
) -> None:
    memory, engine = failing
    chat = EpisodicConversationMemory(
        memory=memory, user_id="u1", agent_id=AGENT, conversation_id="c1"
    )
    answers: list[BaseMessage] = [AIMessage("Monday."), AIMessage("Tuesday."), AIMessage("Friday.")]
    chain = ConversationChain(llm=RecordingChatModel(responses=answers, received=[]), memory=chat)
    engine.writes = True
    assert (await chain.ainvoke({"input": "When is my refund?"}))["response"] == "Monday."
    assert chain.invoke({"input": "And my parcel?"})["response"] == "Tuesday."
    assert (chat.stats().pending, chat.stats().recorded) == (2, 0)
    assert await memory.count(user_id="u1", agent_id=AGENT) == 0
    engine.writes = False
    assert (await chain.ainvoke({"input": "And my invoice?"}))["response"] == "Friday."
    assert (chat.stats().pending, chat.stats().recorded) == (0, 3)
    texts = [
        e["long_summary_text"] for e in await memory.read_recent(10, user_id="u1", agent_id=AGENT)
    ]
    assert sorted(t.split("\n")[0] for t in texts) == [
        "user: And my invoice?",
        "user: And my parcel?",
        "user: When is my refund?",
    ]
    # A clear while an exchange is pending does not let it come back afterwards.
    engine.writes = True
    await chat.asave_context({"input": "One more thing"}, {"response": "Yes?"})
    engine.writes = False
    await chat.aclear()
    assert chat.flush() == 0
    assert await memory.count(user_id="u1", agent_id=AGENT) == 0


def test_a_budget_or_id_that_breaks_every_recall_fails_when_the_piece_is_made(
    hashed: EpisodicMemory,
) -> None:
    too_long = "u" * 600
    for budget in (-1, "300", 2.5, True):
        with pytest.raises(ConfigurationError, match="max_tokens"):
            recall_episodes(hashed, user_id="u1", agent_id=AGENT, max_tokens=budget)  # pyright: ignore[reportArgumentType]
        with pytest.raises(ConfigurationError, match="max_tokens"):
            create_memory_search_tool(hashed, user_id="u1", agent_id=AGENT, max_tokens=budget)  # pyright: ignore[reportArgumentType]
    bad_ids: list[dict[str, Any]] = [
        {"user_id": too_long},
        {"agent_id": too_long},
        {"conversation_id": too_long},
    ]
    for ids in bad_ids:
        with pytest.raises(ConfigurationError, match="at most 512"):
            recall_episodes(hashed, **ids)
        with pytest.raises(ConfigurationError, match="at most 512"):
            EpisodicMemoryMiddleware(hashed, **ids)
    with pytest.raises(ConfigurationError, match="at most 512"):
        create_memory_search_tool(hashed, user_id=too_long)
    # What the core takes is still taken.
    recall_episodes(hashed, user_id="u1", agent_id=AGENT, max_tokens=0)
    create_memory_search_tool(hashed, user_id="u1", agent_id=AGENT, max_tokens=300)


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
async def test_a_classic_chain_called_with_a_blank_message_keeps_its_answer(
    hashed: EpisodicMemory,
) -> None:
    chat = EpisodicConversationMemory(
        memory=hashed, user_id="u1", agent_id=AGENT, conversation_id="c1"
    )
    answers: list[BaseMessage] = [AIMessage("How can I help?"), AIMessage("Hello again.")]
    chain = ConversationChain(llm=RecordingChatModel(responses=answers, received=[]), memory=chat)
    assert chain.invoke({"input": "   "})["response"] == "How can I help?"
    assert (await chain.ainvoke({"input": ""}))["response"] == "Hello again."
    assert await hashed.count(user_id="u1", agent_id=AGENT) == 0
