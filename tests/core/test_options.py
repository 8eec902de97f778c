"""One typed options definition per operation: the core, the CLI and the stores agree on it."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    Embedder,
    EngineOptions,
    Episode,
    EpisodicMemory,
    JSONLTaskStore,
    LessonOptions,
    QdrantTaskStore,
    RecallOptions,
    SearchMode,
    StepLessonMemory,
    Task,
    TaskResult,
    TaskSearchOptions,
    ValidationError,
    open_engine,
)
from episodex.cli import main

#: The default of every recall option, as `RecallOptions` documents it.
DOCUMENTED_DEFAULTS: RecallOptions = {
    "previous_conversation_limit": 10,
    "same_conversation_limit": 5,
    "short_weight": 0.05,
    "long_weight": 0.05,
    "bm25_weight": 0.3,
    "splade_weight": 0.2,
    "splade_short_weight": 0.2,
    "dated_weight": 0.3,
    "speaker_weight": 0.2,
    "speaker_bm25_weight": 0.1,
    "conversation_diversity": 0.03,
    "stage1_limit": 100,
    "rrf_k": 20,
    "with_stream_ranks": True,
}


@pytest.fixture
async def memory(embedder: Embedder) -> typing.AsyncIterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=embedder)
    for i, (short, conversation) in enumerate(
        [("Refund for order 42", "c1"), ("Shipping delay", "c2"), ("Refund again", "c3")]
    ):
        await mem.memorize(
            short_summary=short,
            long_summary=f"{short}: long story {i}",
            user_id="u",
            agent_id="a",
            conversation_id=conversation,
        )
    yield mem
    await mem.aclose()


def test_the_typed_dicts_list_every_option_once() -> None:
    # The context window (seen_from/seen_until) has no default value: absent, nothing is
    # left out (tests/core/test_seen_until.py).
    assert set(RecallOptions.__optional_keys__) == set(DOCUMENTED_DEFAULTS) | {
        "seen_from",
        "seen_until",
        "seen_metadata",
    }
    assert not RecallOptions.__required_keys__
    assert set(TaskSearchOptions.__optional_keys__) == {
        "filter",
        "score_threshold",
        "mode",
        "dense_weight",
        "bm25_weight",
        "rrf_k",
    }
    assert typing.get_args(SearchMode) == ("hybrid", "dense", "bm25")


async def test_the_documented_defaults_are_the_defaults(memory: EpisodicMemory) -> None:
    plain = await memory.recall(user_id="u", agent_id="a", query="refund", conversation_id="c1")
    explicit = await memory.recall(
        user_id="u", agent_id="a", query="refund", conversation_id="c1", **DOCUMENTED_DEFAULTS
    )
    assert plain == explicit
    assert plain["previous_conversations"] and plain["same_conversation"]


async def test_every_recall_option_reaches_the_store(memory: EpisodicMemory) -> None:
    kw: dict[str, Any] = {
        "user_id": "u",
        "agent_id": "a",
        "query": "refund",
        "conversation_id": "c1",
    }
    assert (await memory.recall(**kw, same_conversation_limit=0))["same_conversation"] == []
    assert (await memory.recall(**kw, previous_conversation_limit=1))[
        "previous_conversations"
    ].__len__() == 1
    assert (
        "streams"
        not in (await memory.recall(**kw, with_stream_ranks=False))["previous_conversations"][0]
    )
    for name in ("short_weight", "long_weight", "bm25_weight", "dated_weight"):
        with pytest.raises(ValidationError, match=name):
            await memory.recall(**kw, **{name: -1.0})  # pyright: ignore[reportArgumentType]
    for name in ("stage1_limit", "rrf_k"):
        with pytest.raises(ValidationError, match=name):
            await memory.recall(**kw, **{name: 0})  # pyright: ignore[reportArgumentType]
    block = await memory.recall_block(**kw, short_weight=0.0, long_weight=0.0, rrf_k=1)
    assert block.startswith("<recalled_episodes>")


async def test_an_unknown_recall_option_is_a_type_error(memory: EpisodicMemory) -> None:
    with pytest.raises(TypeError, match="'top_k'"):
        await memory.recall(user_id="u", agent_id="a", query="refund", top_k=3)  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError, match="'top_k'"):
        await memory.recall_block(user_id="u", agent_id="a", query="refund", top_k=3)  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError, match="'top_k'"):
        memory.store.recall(user_id="u", agent_id="a", query="refund", top_k=3)  # pyright: ignore[reportCallIssue]


async def test_task_stores_take_the_typed_search_options(
    embedder: Embedder, tmp_path: Path
) -> None:
    qdrant = QdrantTaskStore(location=":memory:", embedder=embedder)
    jsonl = JSONLTaskStore(tmp_path / "tasks.jsonl")
    episode = Episode(
        task=Task(id_="t1", instruction="convert 3 miles to km"),
        result=TaskResult(task_id="t1", content="4.8 km"),
        metadata={"user": "u1"},
    )
    await qdrant.write(episode)
    await jsonl.write(episode)
    options: TaskSearchOptions = {
        "filter": {"user": "u1"},
        "score_threshold": None,
        "mode": "hybrid",
        "dense_weight": 1.0,
        "bm25_weight": 0.5,
        "rrf_k": 5,
    }
    assert [e.task.id_ for e in await qdrant.search("miles to km", 3, **options)] == ["t1"]
    for mode in typing.get_args(SearchMode):
        assert await qdrant.search("miles to km", 3, mode=mode)
    with pytest.raises(ValidationError, match="mode"):
        await qdrant.search("miles to km", 3, mode="sparse")  # pyright: ignore[reportArgumentType]
    assert [e.task.id_ for e in await jsonl.search("miles km", 3, filter={"user": "u1"})] == ["t1"]
    with pytest.raises(ValidationError, match=r"JSONLTaskStore\.search got unknown option"):
        await jsonl.search("miles km", 3, mode="bm25")
    with pytest.raises(ValidationError, match=r"QdrantTaskStore\.search got unknown option"):
        await qdrant.search("miles km", 3, top=2)  # pyright: ignore[reportCallIssue]


def test_the_cli_sets_every_recall_option_it_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    ids = ["--user", "u", "--agent", "a"]
    assert main(["--path", store, "add", *ids, "--conversation", "c1", "--short", "Refund 42",
                 "--long", "User got a refund for order 42"]) == 0  # fmt: skip
    capsys.readouterr()
    flags = ["--stage1-limit", "5", "--rrf-k", "2", "--previous-limit", "1", "--same-limit", "0"]
    assert main(["--path", store, "--json", "recall", *ids, *flags, "refund"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert len(res["previous_conversations"]) == 1
    # A flag left out takes the core's default; a bad value is the core's ValidationError.
    code = main(["--path", store, "recall", *ids, "--rrf-k", "0", "refund"])
    assert code == 2
    assert "rrf_k" in capsys.readouterr().err


async def test_lesson_options_are_one_typed_dict(memory: EpisodicMemory) -> None:
    assert set(LessonOptions.__optional_keys__) == {
        "env_threshold",
        "top_k",
        "env_weight",
        "state_weight",
        "final_k",
    }
    lessons = StepLessonMemory.from_memory(memory, final_k=1)
    await lessons.init_episode("s1", user_id="u", agent_id="a")
    options: LessonOptions = {"env_threshold": 0.5, "top_k": 3, "final_k": 2}
    assert await lessons.retrieve_memories({"url": "/x"}, "state", **options) == []
    assert await lessons.lessons_block({"url": "/x"}, "state", **options) == ""
    with pytest.raises(ValidationError, match="top_k"):
        await lessons.lessons_block({"url": "/x"}, "state", top_k=0)
    with pytest.raises(TypeError, match="top_kk"):
        await lessons.lessons_block({"url": "/x"}, "state", top_kk=3)  # pyright: ignore[reportCallIssue]


def test_engine_options_are_one_typed_dict(embedder: Embedder) -> None:
    assert set(EngineOptions.__optional_keys__) == {
        "url",
        "location",
        "api_key",
        "qdrant_api_key",
        "prefer_grpc",
        "collection_prefix",
        "timeout",
        "client_options",
        "min_free_bytes",
        "quantize",
    }
    options: EngineOptions = {"location": ":memory:", "collection_prefix": "t_"}
    memory = EpisodicMemory(embedder=embedder, **options)
    store = QdrantTaskStore(embedder=embedder, **options)
    try:
        with pytest.raises(TypeError, match="colection_prefix"):
            EpisodicMemory(engine=memory.engine, colection_prefix="x")  # pyright: ignore[reportCallIssue]
        with pytest.raises(TypeError, match="colection_prefix"):
            QdrantTaskStore(engine=memory.engine, colection_prefix="x")  # pyright: ignore[reportCallIssue]
        with pytest.raises(TypeError, match="colection_prefix"):
            open_engine(location=":memory:", colection_prefix="x")  # pyright: ignore[reportCallIssue]
    finally:
        memory.close()
        store.close()
