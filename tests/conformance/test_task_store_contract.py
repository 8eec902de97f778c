"""The task-store contract: every store method, against every store.

JSONL, and every engine backend of the one registry (`backends.py`): Qdrant Edge,
qdrant-client `:memory:`, and a live server when `QDRANT_URL` is set.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from episodex import (
    ConfigurationError,
    EmbedderMismatchError,
    Episode,
    EpisodeNotFoundError,
    EpisodicMemory,
    JSONLTaskStore,
    QdrantTaskStore,
    StoreClosedError,
    StoreFileError,
    Task,
    TaskResult,
    TaskStore,
    ValidationError,
    default_embedder,
    open_engine,
)
from episodex._tasks.store import episode_point_id
from episodex.plan import Filter, Match
from episodex.testing import HashEmbedder

from .backends import BACKENDS, drop_server_collections, engine_options

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)

CORPUS = [
    (
        "t-miles",
        "Convert 3 miles to kilometres",
        "4.83 km",
        {"user": "u1", "tags": ["units"], "run": {"id": 7}},
    ),
    (
        "t-sales",
        "Summarise the quarterly sales report for the board",
        "Revenue grew 5%",
        {"user": "u2", "urgent": "yes"},
    ),
    (
        "t-french",
        "Translate 'good morning' into French",
        "bonjour",
        {"user": "u1", "tags": ["language"]},
    ),
    ("t-recipe", "Find a vegetarian lasagne recipe", "Spinach and ricotta lasagne", {"user": "u3"}),
]


def episode(
    i: int,
    task_id: str,
    instruction: str,
    result: str,
    metadata: dict[str, object] | None = None,
    **extra: object,
) -> Episode:
    task = Task(id_=task_id, instruction=instruction)
    return Episode(
        id_=f"e-{task_id}",
        task=task,
        rollout=f"step 1 of {task_id}",
        result=TaskResult(task_id=task_id, content=result),
        metadata=metadata or {},
        completed_at=T0 + timedelta(minutes=i),
        **extra,  # type: ignore[arg-type]
    )


def corpus() -> list[Episode]:
    return [episode(i, *row) for i, row in enumerate(CORPUS)]  # pyright: ignore[reportArgumentType]


def open_store(kind: str, folder: Path) -> JSONLTaskStore | QdrantTaskStore:
    if kind == "jsonl":
        return JSONLTaskStore(folder)
    if kind == "edge":
        return QdrantTaskStore(path=folder, embedder=default_embedder())
    return QdrantTaskStore(location=":memory:", embedder=default_embedder())


def close(store: object) -> None:
    if isinstance(store, QdrantTaskStore | JSONLTaskStore):
        store.close()


@pytest.fixture(scope="module")
def shared_qdrant(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, QdrantTaskStore]]:
    # Creating an Edge collection takes about a second, so each engine is opened once per
    # module and emptied before each test.
    stores: dict[str, QdrantTaskStore] = {}
    for backend in BACKENDS:
        name = backend if isinstance(backend, str) else backend.values[0]
        path, options = engine_options(name, tmp_path_factory.mktemp(name))
        stores[name] = QdrantTaskStore(
            path=None if path is None else str(path), embedder=default_embedder(), **options
        )
    yield stores
    for s in stores.values():
        drop_server_collections(s.engine)
        s.close()


def empty(store: QdrantTaskStore) -> QdrantTaskStore:
    everything = Filter(must_not=(Match("task_id", "(no task has this id)"),))
    store.engine.delete(store.collection, everything)
    assert store.engine.count(store.collection, Filter()) == 0
    return store


@pytest.fixture(params=["jsonl", *BACKENDS])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, shared_qdrant: dict[str, QdrantTaskStore]
) -> TaskStore:
    if request.param == "jsonl":
        return JSONLTaskStore(tmp_path / "store")
    return empty(shared_qdrant[request.param])


@pytest.fixture
async def filled(store: TaskStore) -> TaskStore:
    for ep in corpus():
        await store.write(ep)
    return store


def ids(episodes: Sequence[Episode]) -> list[str]:
    return [e.task.id_ for e in episodes]


# -- every store -------------------------------------------------------------------------


async def test_stores_satisfy_the_protocol(store: TaskStore) -> None:
    assert isinstance(store, TaskStore)
    assert await store.count() == 0
    assert await store.read_recent(3) == []
    assert await store.search("anything", k=3) == []
    assert "0 episodes" in await store.summary()


async def test_write_count_and_read_recent_newest_first(filled: TaskStore) -> None:
    assert await filled.count() == 4
    assert ids(await filled.read_recent(2)) == ["t-recipe", "t-french"]
    assert ids(await filled.read_recent(10)) == ["t-recipe", "t-french", "t-sales", "t-miles"]
    assert await filled.read_recent(0) == []


async def test_read_back_equals_what_was_written(store: TaskStore) -> None:
    ep = episode(
        0,
        "t-full",
        "Book a table for two",
        "Booked at 19:00",
        {"user": "u1", "n": [1, 2]},
        additional_data={"reflection": "Ask for the time first."},
        error=None,
    )
    await store.write(ep)
    assert (await store.read_recent(1))[0] == ep
    assert (await store.search("table for two", k=1))[0] == ep


async def test_a_second_attempt_at_a_task_is_kept_and_its_id_rewrite_replaces(
    filled: TaskStore,
) -> None:
    again = episode(9, "t-miles", "Convert 3 miles to kilometres", "4.828 km")
    again = again.replace(id_="e-new")
    await filled.write(again)
    await filled.write(again)  # the same episode id again: replaced, not duplicated
    assert await filled.count() == 5
    newest = (await filled.read_recent(1))[0]
    assert (
        newest.id_ == "e-new" and newest.result is not None and newest.result.content == "4.828 km"
    )
    await filled.delete("e-t-miles")  # the first attempt is still there  # pyright: ignore[reportAttributeAccessIssue]


async def test_an_episode_id_moved_to_another_task_is_not_duplicated(
    filled: TaskStore,
) -> None:
    moved = episode(9, "t-other", "Convert 5 miles to kilometres", "8.05 km").replace(
        id_="e-t-miles"
    )
    await filled.write(moved)
    assert await filled.count() == 4
    assert "t-miles" not in ids(await filled.read_recent(10))


async def test_search_ranks_the_relevant_episode_first(filled: TaskStore) -> None:
    assert ids(await filled.search("How many kilometres are 10 miles?", k=1)) == ["t-miles"]
    assert ids(await filled.search("lasagne recipe", k=2))[0] == "t-recipe"
    assert len(await filled.search("recipe", k=0)) == 0
    assert len(await filled.search("translate French lasagne miles sales", k=2)) == 2


async def test_search_filters_on_metadata(filled: TaskStore) -> None:
    assert set(
        ids(await filled.search("convert translate summarise find", k=4, filter={"user": "u1"}))
    ) <= {
        "t-miles",
        "t-french",
    }
    assert (
        ids(await filled.search("Translate into French", k=4, filter={"user": "u1"}))[0]
        == "t-french"
    )
    assert await filled.search("Translate into French", k=4, filter={"user": "nobody"}) == []
    assert ids(await filled.search("miles", k=4, filter={"tags": ["units", "other"]})) == [
        "t-miles"
    ]
    assert ids(await filled.search("miles", k=4, filter={"run.id": 7})) == ["t-miles"]
    assert ids(await filled.search("sales report", k=4, filter={"urgent": "yes"})) == ["t-sales"]
    with pytest.raises(ValidationError, match="boolean"):
        await filled.search("sales report", k=4, filter={"urgent": True})


async def test_search_score_threshold_is_passed_through(filled: TaskStore) -> None:
    assert await filled.search("kilometres miles", k=4, score_threshold=1e6) == []
    kept = await filled.search("Convert 3 miles to kilometres", k=4, score_threshold=0.5)
    assert ids(kept)[:1] == ["t-miles"]


async def test_search_rejects_bad_arguments(filled: TaskStore) -> None:
    with pytest.raises(ValidationError, match="query"):
        await filled.search("   ", k=3)
    with pytest.raises(ValidationError, match="k must"):
        await filled.search("miles", k=-1)
    with pytest.raises(ValidationError, match="unknown option"):
        await filled.search("miles", k=3, score_treshold=0.5)
    with pytest.raises(ValidationError, match="filter value"):
        await filled.search("miles", k=3, filter={"user": 1.5})
    with pytest.raises(ValidationError, match="filter key"):
        await filled.search("miles", k=3, filter={"": "x"})
    with pytest.raises(ValidationError, match="score_threshold"):
        await filled.search("miles", k=3, score_threshold="high")


async def test_embedded_text_is_what_gets_indexed(store: TaskStore) -> None:
    for ep in corpus():
        await store.write(ep)
    odd = episode(9, "t-odd", "Water the plants", "done")
    await store.write(odd, embedded_text="zebra giraffe savannah safari")
    assert ids(await store.search("zebra safari", k=1)) == ["t-odd"]
    with pytest.raises(ValidationError, match="embedded_text"):
        await store.write(odd, embedded_text="  ")


async def test_delete(filled: TaskStore) -> None:
    await filled.delete("e-t-sales")  # pyright: ignore[reportAttributeAccessIssue]
    assert await filled.count() == 3
    assert "t-sales" not in ids(await filled.read_recent(10))
    assert "t-sales" not in ids(await filled.search("quarterly sales report", k=4))
    with pytest.raises(EpisodeNotFoundError, match="e-t-sales"):
        await filled.delete("e-t-sales")  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ValidationError):
        await filled.delete("")  # pyright: ignore[reportAttributeAccessIssue]
    assert await filled.count() == 3


async def test_update(filled: TaskStore) -> None:
    old = (await filled.read_recent(10))[-1]
    assert old.task.id_ == "t-miles"
    new = old.replace(
        result=TaskResult(task_id="t-miles", content="4.828 km (exact)"),
        additional_data={"reflection": "Use the exact factor."},
    )
    await filled.update(new)  # pyright: ignore[reportAttributeAccessIssue]
    assert await filled.count() == 4
    got = (await filled.search("miles kilometres", k=1))[0]
    assert got == new
    missing = episode(9, "t-ghost", "Not stored", "x")
    with pytest.raises(EpisodeNotFoundError, match="e-t-ghost"):
        await filled.update(missing)  # pyright: ignore[reportAttributeAccessIssue]
    assert await filled.count() == 4
    assert "t-ghost" not in ids(await filled.read_recent(10))


async def test_summary_says_count_range_newest_and_oldest(filled: TaskStore) -> None:
    text = await filled.summary()
    assert "4 episodes" in text
    assert "from 2024-03-01 08:00:00 to 2024-03-01 08:03:00" in text
    assert "newest: 2024-03-01 08:03:00 | Find a vegetarian lasagne recipe" in text
    assert "oldest: 2024-03-01 08:00:00 | Convert 3 miles to kilometres" in text


async def test_bad_writes_change_nothing(filled: TaskStore) -> None:
    with pytest.raises(ValidationError):
        await filled.write("not an episode")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await filled.write({"task": {"instruction": ""}})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await filled.read_recent(-1)
    assert await filled.count() == 4


@pytest.mark.parametrize("kind", ["jsonl", "edge"])
async def test_file_stores_persist_across_reopen(kind: str, tmp_path: Path) -> None:
    first = open_store(kind, tmp_path)
    for ep in corpus():
        await first.write(ep)
    await first.delete("e-t-french")
    close(first)
    second = open_store(kind, tmp_path)
    try:
        assert await second.count() == 3
        assert ids(await second.read_recent(10)) == ["t-recipe", "t-sales", "t-miles"]
        assert ids(await second.search("miles to kilometres", k=1)) == ["t-miles"]
    finally:
        close(second)


@pytest.mark.parametrize("kind", ["jsonl", *BACKENDS])
async def test_a_closed_store_refuses_every_call_and_closes_twice(
    kind: str, tmp_path: Path
) -> None:
    # Like a closed EpisodicMemory: every call raises StoreClosedError, whatever the backend
    # (a closed JSONL store answered from its stale copy of a file another store may write).
    path, options = engine_options("edge" if kind == "jsonl" else kind, tmp_path)

    def reopen() -> JSONLTaskStore | QdrantTaskStore:
        if kind == "jsonl":
            return JSONLTaskStore(tmp_path)
        return QdrantTaskStore(
            path=None if path is None else str(path), embedder=default_embedder(), **options
        )

    store = reopen()
    for ep in corpus()[:2]:
        await store.write(ep)
    store.close()
    store.close()  # closing twice is fine
    calls = {
        "write": lambda: store.write(corpus()[2]),
        "read_recent": lambda: store.read_recent(3),
        "read_recent(0)": lambda: store.read_recent(0),
        "count": lambda: store.count(),
        "search": lambda: store.search("miles to kilometres", k=3),
        "search(k=0)": lambda: store.search("miles to kilometres", k=0),
        "summary": lambda: store.summary(),
        "delete": lambda: store.delete("e-t-miles"),
        "delete a missing one": lambda: store.delete("e-nowhere"),
        "update": lambda: store.update(corpus()[0].replace(rollout="again")),
    }
    if isinstance(store, JSONLTaskStore):
        calls["compact"] = store.compact
    for name, call in calls.items():
        with pytest.raises(StoreClosedError):
            await call()
            pytest.fail(f"{name} of a closed {kind} store did not raise")
    if kind in ("jsonl", "edge"):
        reopened = reopen()
        try:
            assert ids(await reopened.read_recent(5)) == ["t-sales", "t-miles"]  # unchanged
        finally:
            reopened.close()
    elif kind == "server":
        engine = open_engine(**options)
        drop_server_collections(engine)
        engine.close()


# -- JSONL -------------------------------------------------------------------------------


async def test_jsonl_is_append_only(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    for ep in corpus():
        await store.write(ep)
    before = store.path.read_bytes()
    await store.delete("e-t-sales")
    await store.update(corpus()[0].replace(rollout="again"))
    after = store.path.read_bytes()
    assert after.startswith(before)
    ops = [json.loads(line)["op"] for line in after.decode().splitlines()]
    assert ops == ["write"] * 4 + ["delete", "update"]


async def test_jsonl_torn_last_line_is_reported_and_kept_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JSONLTaskStore(tmp_path)
    for ep in corpus()[:2]:
        await store.write(ep)
    fragment = b'{"op":"write","episode":{"id_":"e-lost","task":{"id_":"t-lo'
    with store.path.open("ab") as fh:
        fh.write(fragment)  # a crash in the middle of the third write
    whole = store.path.read_bytes()
    store.close()

    with pytest.raises(StoreFileError, match="torn line 3") as info:
        JSONLTaskStore(tmp_path, on_torn_line="raise")
    assert info.value.errors[0][0] == 3
    assert store.path.read_bytes() == whole  # raising leaves the file as it was

    with caplog.at_level(logging.WARNING, logger="episodex"):
        reopened = JSONLTaskStore(tmp_path)
    assert "torn line 3" in caplog.text
    [torn] = reopened.torn_lines
    assert (torn.line_number, torn.text) == (3, fragment.decode())
    assert torn.saved_to.read_bytes() == fragment + b"\n"
    assert await reopened.count() == 2  # the whole lines before it are all there
    await reopened.write(corpus()[2])
    reopened.close()
    again = JSONLTaskStore(tmp_path)
    assert again.torn_lines == []
    assert ids(await again.read_recent(5)) == ["t-french", "t-sales", "t-miles"]


async def test_jsonl_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    await store.write(corpus()[0])
    store.path.write_bytes(store.path.read_bytes().rstrip(b"\n"))
    store.close()
    reopened = JSONLTaskStore(tmp_path)
    assert reopened.torn_lines == [] and await reopened.count() == 1
    await reopened.write(corpus()[1])
    reopened.close()
    assert await JSONLTaskStore(tmp_path).count() == 2


async def test_jsonl_bad_line_in_the_middle_raises_and_changes_nothing(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    for ep in corpus()[:2]:
        await store.write(ep)
    lines = store.path.read_bytes().split(b"\n")
    lines.insert(1, b"{not json")
    lines.insert(2, b'{"op":"explode"}')
    store.path.write_bytes(b"\n".join(lines))
    whole = store.path.read_bytes()
    store.close()
    with pytest.raises(StoreFileError, match="2 bad line") as info:
        JSONLTaskStore(tmp_path)
    assert [n for n, _ in info.value.errors] == [2, 3]
    assert store.path.read_bytes() == whole


async def test_jsonl_compact_keeps_only_live_episodes(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    for ep in corpus():
        await store.write(ep)
    await store.delete("e-t-sales")
    await store.write(corpus()[0].replace(rollout="again"))
    assert await store.compact() == 3
    assert len(store.path.read_text().splitlines()) == 3
    store.close()
    reopened = JSONLTaskStore(tmp_path)
    assert ids(await reopened.read_recent(5)) == ["t-recipe", "t-french", "t-miles"]


def test_jsonl_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        JSONLTaskStore(tmp_path, filename="../escape.jsonl")
    with pytest.raises(ConfigurationError):
        JSONLTaskStore(tmp_path, on_torn_line="ignore")  # type: ignore[arg-type]


# -- Qdrant ------------------------------------------------------------------------------


async def test_qdrant_store_shares_an_episodic_memory_folder(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path)
    try:
        store = QdrantTaskStore(memory=memory)
        assert store.engine is memory.engine and store.embedder is memory.embedder
        await store.write(corpus()[0])
        await memory.memorize(
            short_summary="Asked about a refund",
            long_summary="The user asked for a refund.",
            user_id="u1",
            agent_id="a",
            conversation_id="c1",
        )
        assert await store.count() == 1
        assert await memory.count(user_id="u1", agent_id="a") == 1
        store.close()  # does not close the memory's engine
        assert await store.count() == 1
    finally:
        memory.close()
    assert {p.name for p in tmp_path.iterdir()} >= {"episodes", "task_episodes"}


async def test_qdrant_store_refuses_another_embedder(tmp_path: Path) -> None:
    QdrantTaskStore(path=tmp_path).close()
    with pytest.raises(EmbedderMismatchError, match="fake-8"):
        QdrantTaskStore(path=tmp_path, embedder=HashEmbedder(dimension=8, model_id="fake-8"))
    QdrantTaskStore(path=tmp_path).close()  # the failed open released the folder


async def test_qdrant_point_ids_derive_from_episode_ids(tmp_path: Path) -> None:
    assert episode_point_id("e-1") == episode_point_id("e-1") != episode_point_id("e-2")
    assert episode_point_id("e-1") != episode_point_id("e-1", ("u1", None))
    store = QdrantTaskStore(location=":memory:")
    try:
        await store.write(corpus()[0])
        hits, _ = store.engine.scroll(store.collection, Filter(), limit=5)
        assert [h.id for h in hits] == [episode_point_id("e-t-miles")]
    finally:
        store.close()


async def test_qdrant_search_modes_and_plan_filters(tmp_path: Path) -> None:
    store = QdrantTaskStore(path=tmp_path)
    try:
        for ep in corpus():
            await store.write(ep)
        q = "kilometres in 3 miles"
        assert ids(await store.search(q, k=1, mode="dense"))[0] == "t-miles"
        assert ids(await store.search(q, k=1, mode="bm25")) == ["t-miles"]
        assert ids(await store.search(q, k=1, bm25_weight=0)) == ["t-miles"]
        assert ids(
            await store.search(q, k=4, filter=Filter(must=(Match("task_id", "t-sales"),)))
        ) == ["t-sales"]
        dense_high = await store.search(q, k=4, mode="dense", score_threshold=0.99)
        assert dense_high == []
        # Only stopwords: BM25 has nothing, the dense stream still answers.
        assert len(await store.search("the of and", k=2)) == 2
        assert await store.search("the of and", k=2, mode="bm25") == []
        with pytest.raises(ValidationError, match="mode"):
            await store.search(q, k=1, mode="sparse")  # pyright: ignore[reportArgumentType]
        with pytest.raises(ValidationError, match="both 0"):
            await store.search(q, k=1, dense_weight=0, bm25_weight=0)
        with pytest.raises(ValidationError, match="rrf_k"):
            await store.search(q, k=1, rrf_k=0)
    finally:
        store.close()


def test_qdrant_store_needs_exactly_one_place(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="exactly one"):
        QdrantTaskStore()
    with pytest.raises(ConfigurationError, match="exactly one"):
        QdrantTaskStore(path=tmp_path, location=":memory:")
