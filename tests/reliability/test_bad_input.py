"""Bad input: every class gets a typed error that says what to fix, and the store is unchanged.

Each rejected call is checked against a snapshot of the whole store (every tenant, every
field) taken before it.
"""

from __future__ import annotations

import io
import json
import math
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    EmbedderMismatchError,
    EngineError,
    EngineUnavailableError,
    EpisodexError,
    EpisodicMemory,
    ImportFileError,
    NotFoundError,
    ValidationError,
    default_embedder,
)
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory, parse_export, snapshot, total_points

GOOD: dict[str, Any] = {
    "short_summary": "refund for order 1234",
    "long_summary": "the user asked for a refund; done",
    "user_id": "u1",
    "agent_id": "a1",
    "conversation_id": "c1",
}
UNKNOWN = str(uuid.UUID(int=7))


@pytest.fixture(scope="module", params=BACKENDS)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EpisodicMemory]:
    """One store per backend with a few episodes of two tenants; the tests must not change it."""
    with open_memory(
        request.param, tmp_path_factory.mktemp("bad"), embedder=default_embedder()
    ) as mem:
        mem.store.memorize_many(
            [
                {**GOOD, "short_summary": f"episode {i}", "conversation_id": f"c{i % 2}"}
                for i in range(4)
            ]
            + [{**GOOD, "user_id": "u2", "short_summary": "someone else"}]
        )
        yield mem


async def _rejected(
    mem: EpisodicMemory, call: Callable[[], Awaitable[Any]], error: type[Exception], match: str
) -> Exception:
    before = snapshot(mem)
    with pytest.raises(error, match=match) as info:
        await call()
    assert isinstance(info.value, EpisodexError)
    assert snapshot(mem) == before, "a rejected call changed the store"
    return info.value


MEMORIZE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("summary not a string", {"short_summary": 123}, "short_summary"),
    ("summary None", {"long_summary": None}, "long_summary"),
    ("empty summary", {"short_summary": ""}, "short_summary: must contain text"),
    ("whitespace summary", {"long_summary": " \n\t "}, "long_summary: must contain text"),
    ("user id None", {"user_id": None}, "user_id"),
    ("user id an int", {"user_id": 7}, "user_id"),
    ("empty user id", {"user_id": ""}, "user_id"),
    ("whitespace user id", {"user_id": "   "}, "user_id: must contain text"),
    ("whitespace agent id", {"agent_id": "\t"}, "agent_id"),
    ("agent id a list", {"agent_id": ["a1"]}, "agent_id"),
    ("whitespace conversation", {"conversation_id": " "}, "conversation_id"),
    ("user id too long", {"user_id": "x" * 513}, "user_id"),
    ("negative start", {"start_index": -1}, "start_index"),
    ("start as text", {"start_index": "3"}, "start_index"),
    ("start as bool", {"start_index": True}, "start_index"),
    ("end before start", {"start_index": 5, "end_index": 1}, "end_index .* before start_index"),
    ("flows as a string", {"flows_activated": "billing"}, "flows_activated"),
    ("flows with a number", {"flows_activated": [1]}, "flows_activated"),
    ("blank tool", {"tools_invoked": ["  "]}, "tools_invoked"),
    ("time as prose", {"timestamp_begin": "yesterday"}, "timestamp_begin"),
    (
        "end before begin",
        {"timestamp_begin": "2024-01-02T00:00:00", "timestamp_end": "2024-01-01T00:00:00"},
        "timestamp_end is before timestamp_begin",
    ),
    ("NaN sentiment", {"average_user_sentiment": math.nan}, "average_user_sentiment.*finite"),
    ("infinite sentiment", {"average_user_sentiment": math.inf}, "average_user_sentiment.*finite"),
    ("-inf sentiment", {"average_user_sentiment": -math.inf}, "average_user_sentiment"),
    (
        "sentiment out of range",
        {"average_user_sentiment": 1.5},
        r"average_user_sentiment.*\[-1, 1\]",
    ),
    ("sentiment as text", {"average_user_sentiment": "0.5"}, "average_user_sentiment"),
    ("negative variance", {"user_sentiment_variance": -0.1}, "user_sentiment_variance"),
    ("NaN variance", {"user_sentiment_variance": math.nan}, "user_sentiment_variance"),
    ("metadata with an object", {"metadata": {"a": object()}}, "metadata.*JSON"),
    ("metadata with NaN", {"metadata": {"a": [1, math.nan]}}, "metadata.*NaN"),
    ("metadata with bytes", {"metadata": {"a": b"x"}}, "metadata"),
    ("metadata with a set", {"metadata": {"a": {1, 2}}}, "metadata"),
    ("metadata with an int key", {"metadata": {1: "x"}}, "metadata"),
    ("metadata a string", {"metadata": "note"}, "metadata"),
    ("metadata pairs", {"metadata": [("a", 1)]}, "metadata"),
    ("point id not a UUID", {"point_id": "episode-1"}, "point_id.*UUID"),
    ("point id an int", {"point_id": 123}, "point_id"),
]


@pytest.mark.parametrize(
    ("changes", "match"), [c[1:] for c in MEMORIZE_CASES], ids=[c[0] for c in MEMORIZE_CASES]
)
async def test_memorize_rejects_bad_fields(
    seeded: EpisodicMemory, changes: dict[str, Any], match: str
) -> None:
    await _rejected(seeded, lambda: seeded.memorize(**{**GOOD, **changes}), ValidationError, match)


async def test_memorize_many_rejects_the_whole_call_naming_the_bad_episode(
    seeded: EpisodicMemory,
) -> None:
    mem = seeded
    good = [GOOD, {**GOOD, "conversation_id": "c9"}]
    await _rejected(
        mem,
        lambda: mem.memorize_many([*good, {**GOOD, "user_id": ""}]),
        ValidationError,
        "episode 2: ",
    )
    await _rejected(
        mem,
        lambda: mem.memorize_many([GOOD, 42]),  # pyright: ignore[reportArgumentType]
        ValidationError,
        "episode 1: expected a mapping",  # pyright: ignore[reportArgumentType]
    )
    await _rejected(
        mem,
        lambda: mem.memorize_many([{"short_summary": "s", "long_summary": "l"}]),
        ValidationError,
        "user_id is required.*agent_id is required",
    )
    await _rejected(
        mem,
        lambda: mem.memorize_many([{**GOOD, "summary": "x"}]),
        ValidationError,
        "summary is not a field",
    )
    await _rejected(mem, lambda: mem.memorize_many(GOOD), ValidationError, "not a single one")  # type: ignore[arg-type]
    await _rejected(mem, lambda: mem.memorize_many("text"), ValidationError, "not a single one")  # type: ignore[arg-type]
    await _rejected(mem, lambda: mem.memorize_many(None), ValidationError, "got NoneType")  # type: ignore[arg-type]
    await _rejected(
        mem, lambda: mem.memorize_many(good, batch_size=0), ValidationError, "batch_size"
    )
    pid = str(uuid.uuid4())
    await _rejected(
        mem,
        lambda: mem.memorize_many(
            [{**GOOD, "point_id": pid}, {**GOOD, "user_id": "u2", "point_id": pid}]
        ),
        ValidationError,
        "episode 1: .*another user or agent",
    )
    # An id that u2 owns cannot be written by u1: that would overwrite u2's episode.
    theirs = (await mem.read_recent(1, user_id="u2", agent_id="a1"))[0]["point_id"]
    await _rejected(
        mem,
        lambda: mem.memorize(**GOOD, point_id=theirs),
        ValidationError,
        "already belongs to another user or agent; omit point_id",
    )


async def test_reads_reject_bad_arguments(seeded: EpisodicMemory) -> None:
    mem = seeded
    t: dict[str, Any] = {"user_id": "u1", "agent_id": "a1"}
    cases: list[tuple[Callable[[], Awaitable[Any]], str]] = [
        (lambda: mem.recall(**t, query=""), "query must be a non-empty string"),
        (lambda: mem.recall(**t, query="   "), "query"),
        (lambda: mem.recall(**t, query=None), "query"),  # type: ignore[arg-type]
        (
            lambda: mem.recall(user_id="", agent_id="a1", query="q"),
            "user_id must be a non-empty string",
        ),
        (lambda: mem.recall(user_id="u1", agent_id=None, query="q"), "agent_id"),  # type: ignore[arg-type]
        (lambda: mem.recall(**t, query="q", conversation_id=" "), "conversation_id"),
        (
            lambda: mem.recall(**t, query="q", previous_conversation_limit=-1),
            "previous_conversation_limit.*>= 0",
        ),
        (lambda: mem.recall(**t, query="q", same_conversation_limit=-5), "same_conversation_limit"),
        (
            lambda: mem.recall(**t, query="q", previous_conversation_limit=2.5),  # pyright: ignore[reportArgumentType]
            "previous_conversation_limit",
        ),
        (
            lambda: mem.recall(**t, query="q", previous_conversation_limit=True),
            "previous_conversation_limit",
        ),
        (lambda: mem.recall(**t, query="q", stage1_limit=0), "stage1_limit.*>= 1"),
        (lambda: mem.recall(**t, query="q", rrf_k=0), "rrf_k"),
        (lambda: mem.recall(**t, query="q", short_weight=-0.1), "short_weight.*finite number >= 0"),
        (lambda: mem.recall(**t, query="q", long_weight=math.nan), "long_weight"),
        (lambda: mem.recall(**t, query="q", bm25_weight=math.inf), "bm25_weight"),
        (lambda: mem.recall(**t, query="q", bm25_weight="1"), "bm25_weight"),  # type: ignore[arg-type]
        (
            lambda: mem.recall(
                **t,
                query="q",
                short_weight=0,
                long_weight=0,
                bm25_weight=0,
                splade_weight=0,
                splade_short_weight=0,
            ),
            "all 0: give at least one a weight > 0",
        ),
        (lambda: mem.recall_block(**t, query="q", max_tokens=-1), "max_tokens"),
        (lambda: mem.read_recent(-1, **t), "n must be an integer >= 0"),
        (lambda: mem.read_recent(1.5, **t), "n must be"),  # type: ignore[arg-type]
        (lambda: mem.read_recent(3, **t, conversation_id=""), "conversation_id"),
        (lambda: mem.count(user_id=None, agent_id="a1"), "user_id"),  # type: ignore[arg-type]
        (lambda: mem.stats(**t, top=0), "top must be an integer >= 1"),
        (lambda: mem.get("episode-1", **t), "point_id must be a UUID"),
        (lambda: mem.get(123, **t), "point_id"),  # type: ignore[arg-type]
        (lambda: mem.forget(**t), "exactly one of point_id"),
        (lambda: mem.forget(**t, point_id=UNKNOWN, everything=True), "exactly one of"),
        (lambda: mem.forget(**t, everything="yes"), "exactly one of"),  # type: ignore[arg-type]
        (lambda: mem.forget(**t, point_id="garbage"), "point_id must be a UUID"),
        (lambda: mem.forget(**t, conversation_id=""), "conversation_id"),
        (lambda: mem.forget(user_id=" ", agent_id="a1", everything=True), "user_id"),
        (lambda: mem.import_(io.StringIO(""), errors="bogus"), "errors must be 'strict' or 'skip'"),  # type: ignore[arg-type]
    ]
    for call, match in cases:
        await _rejected(mem, call, ValidationError, match)


async def test_unknown_ids_are_not_found_and_change_nothing(seeded: EpisodicMemory) -> None:
    mem = seeded
    err = await _rejected(
        mem, lambda: mem.get(UNKNOWN, user_id="u1", agent_id="a1"), NotFoundError, UNKNOWN
    )
    assert isinstance(err, KeyError)
    before = snapshot(mem)
    assert await mem.forget(user_id="u1", agent_id="a1", point_id=UNKNOWN) == 0
    assert await mem.forget(user_id="u1", agent_id="a1", conversation_id="never") == 0
    assert await mem.forget(user_id="nobody", agent_id="a1", everything=True) == 0
    assert await mem.count(user_id="nobody", agent_id="a1") == 0
    assert snapshot(mem) == before


async def test_files_that_cannot_be_read_or_written(seeded: EpisodicMemory, tmp_path: Path) -> None:
    mem = seeded
    t: dict[str, Any] = {"user_id": "u1", "agent_id": "a1"}
    await _rejected(
        mem,
        lambda: mem.import_(tmp_path / "missing.jsonl"),
        ValidationError,
        "cannot read the import file .*missing.jsonl",
    )
    await _rejected(
        mem, lambda: mem.import_(tmp_path), ValidationError, "cannot read the import file"
    )
    await _rejected(
        mem,
        lambda: mem.export(tmp_path / "no" / "such" / "dir.jsonl", **t),
        ValidationError,
        "cannot write the export file",
    )
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\x00\x01\n")
    err = await _rejected(mem, lambda: mem.import_(binary), ImportFileError, "line 2: not UTF-8")
    assert [n for n, _ in err.errors] == [2]  # type: ignore[attr-defined]


async def test_corrupt_export_file_reports_lines_strict_imports_nothing_skip_imports_the_rest(
    seeded: EpisodicMemory, tmp_path: Path
) -> None:
    mem = seeded
    source = tmp_path / "export.jsonl"
    assert await mem.export(source, user_id="u1", agent_id="a1") == 4
    good_lines = source.read_text(encoding="utf-8").split("\n")[:4]
    records = [json.loads(line) for line in good_lines]
    # Fresh ids so the valid lines are new episodes, not replacements.
    for r in records:
        r["point_id"] = str(uuid.uuid4())
    bad_record = {**records[2], "average_user_sentiment": None, "user_id": ""}
    lines = [
        json.dumps(records[0]),
        '{"short_summary": "cut off in the midd',  # 2: torn JSON
        json.dumps(records[1]),
        json.dumps(bad_record),  # 4: invalid field
        "[1, 2, 3]",  # 5: JSON, not a record
        "",
        json.dumps({**records[3], "user_id": "u2"}),  # 7: another user than asked for
        json.dumps(records[3])[:-1],  # 8: torn last line
    ]
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text("\n".join(lines), encoding="utf-8")

    err = await _rejected(
        mem,
        lambda: mem.import_(corrupt, user_id="u1"),
        ImportFileError,
        "5 bad line\\(s\\), nothing imported: line 2: not JSON",
    )
    assert [n for n, _ in err.errors] == [2, 4, 5, 7, 8]  # type: ignore[attr-defined]
    assert "errors='skip'" in str(err)

    before = total_points(mem)
    report = await mem.import_(corrupt, errors="skip", user_id="u1")
    try:
        assert [n for n, _ in report.skipped] == [2, 4, 5, 7, 8]
        assert sorted(report.imported) == sorted([records[0]["point_id"], records[1]["point_id"]])
        assert total_points(mem) == before + 2
        for r in records[:2]:
            got = await mem.get(r["point_id"], user_id="u1", agent_id="a1")
            assert got["short_summary_text"] == r["short_summary"]
    finally:
        for pid in report.imported:
            await mem.forget(user_id="u1", agent_id="a1", point_id=pid)
    assert total_points(mem) == before


async def test_export_import_round_trip_survives_unicode_line_separators(tmp_path: Path) -> None:
    """U+2028, U+2029 and U+0085 are left raw by json.dumps: they must not split a record."""
    texts = ["a\u2028b", "c\u2029d", "e\x85f", "g\x1ch", "i\r\nj"]
    with (
        open_memory("memory", tmp_path, embedder=HashEmbedder()) as src,
        open_memory("memory", tmp_path, embedder=HashEmbedder()) as dst,
    ):
        for text in texts:
            await src.memorize(**{**GOOD, "short_summary": text, "long_summary": text})  # pyright: ignore[reportArgumentType]
        buf = io.StringIO()
        assert await src.export(buf, user_id="u1", agent_id="a1") == len(texts)
        buf.seek(0)
        report = await dst.import_(buf)
        assert len(report.imported) == len(texts) and report.skipped == []
        again = io.StringIO()
        await dst.export(again, user_id="u1", agent_id="a1")
        assert sorted(r["short_summary"] for r in parse_export(again.getvalue())) == sorted(texts)


# -- one megabyte ------------------------------------------------------------------------


async def test_a_one_megabyte_summary_is_embedded_truncated_and_stored_whole(
    memory: EpisodicMemory,
) -> None:
    head = "the customer reports that the invoice total is wrong after the discount was applied. "
    text = head + "filler words go on and on. " * ((1 << 20) // 27)
    assert len(text) >= 1 << 20
    start = time.perf_counter()
    pid = await memory.memorize(**{**GOOD, "long_summary": text})  # pyright: ignore[reportArgumentType]
    elapsed = time.perf_counter() - start
    assert elapsed < 30, (
        f"memorizing 1 MB took {elapsed:.1f}s: the text was not cut before embedding"
    )
    got = await memory.get(pid, user_id="u1", agent_id="a1")
    assert got["long_summary_text"] == text  # stored whole
    # The long vector is the embedding of the text's start (the model's window of 256 word
    # pieces, far fewer than 4096 characters), so a query that is that start finds it with a
    # near-perfect cosine on the long stream.
    res = await memory.recall(
        user_id="u1",
        agent_id="a1",
        query=text[:4096],
        short_weight=0,
        long_weight=1,
        bm25_weight=0,
    )
    hit = res["previous_conversations"][0]
    assert hit["point_id"] == pid
    assert hit["streams"]["long"]["score"] > 0.99
    buf = io.StringIO()
    await memory.export(buf, user_id="u1", agent_id="a1")
    assert parse_export(buf.getvalue())[0]["long_summary"] == text


# -- opening a store with the wrong embedder ---------------------------------------------


async def test_opening_a_store_made_with_another_embedder_or_dimension(tmp_path: Path) -> None:
    store = tmp_path / "store"
    mem = EpisodicMemory(store, embedder=HashEmbedder(dimension=64))
    await mem.memorize(**GOOD)
    before = snapshot(mem)
    mem.close()
    with pytest.raises(
        EmbedderMismatchError, match=r"created with embedder .*test/hash-bag-of-words.* export"
    ):
        EpisodicMemory(store, embedder=HashEmbedder(dimension=64, model_id="test/another-model"))
    with pytest.raises(EmbedderMismatchError, match="dimension 64 but this memory uses 32"):
        EpisodicMemory(store, embedder=HashEmbedder(dimension=32))
    with pytest.raises(EmbedderMismatchError):
        EpisodicMemory(store, embedder=default_embedder())
    # The refused opens released the folder and changed nothing.
    mem = EpisodicMemory(store, embedder=HashEmbedder(dimension=64))
    try:
        assert snapshot(mem) == before
    finally:
        mem.close()


async def test_a_corrupt_store_manifest_is_a_typed_error(tmp_path: Path) -> None:
    store = tmp_path / "store"
    mem = EpisodicMemory(store, embedder=HashEmbedder(dimension=64))
    await mem.memorize(**GOOD)
    mem.close()
    manifest = store / "episodes" / "episodex.json"
    good = manifest.read_text()
    for broken in ("{not json", "[1, 2]", "\udcff"):
        manifest.write_text(broken, encoding="utf-8", errors="surrogateescape")
        with pytest.raises(EngineError, match="restore it from a backup"):
            EpisodicMemory(store, embedder=HashEmbedder(dimension=64))
    manifest.write_text(good)
    mem = EpisodicMemory(
        store, embedder=HashEmbedder(dimension=64)
    )  # the failed opens held nothing
    try:
        assert await mem.count(user_id="u1", agent_id="a1") == 1
    finally:
        mem.close()


async def test_sharing_an_engine_with_another_embedder_is_refused(tmp_path: Path) -> None:
    with open_memory("memory", tmp_path, embedder=HashEmbedder()) as mem:
        await mem.memorize(**GOOD)
        before = snapshot(mem)
        with pytest.raises(EmbedderMismatchError, match="dimension"):
            EpisodicMemory(engine=mem.engine, embedder=HashEmbedder(dimension=16))
        assert snapshot(mem) == before  # and the shared engine is still open
        assert await mem.count(user_id="u1", agent_id="a1") == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"path": "store", "url": "http://127.0.0.1:1"}, "exactly one of path="),
        # No place at all opens the default store now (tests/core/test_store_opening.py).
        ({"location": "disk"}, "location must be ':memory:'"),
        ({"location": ":memory:", "embedder": object()}, "embedder must provide"),
        ({"location": ":memory:", "embedder": "no/such-model"}, "fastembed has no text model"),
        (
            {"location": ":memory:", "embedder": HashEmbedder(dimension=0)},
            "dimension must be a positive",
        ),
        (
            {"location": ":memory:", "embedder": HashEmbedder(model_id="")},
            "model_id must be a non-empty",
        ),
    ],
)
def test_configuration_errors(tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    if "path" in kwargs:
        kwargs = {**kwargs, "path": tmp_path / kwargs["path"]}
    with pytest.raises(ConfigurationError, match=match):
        EpisodicMemory(**kwargs)


def test_a_store_path_that_is_a_file(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    with pytest.raises(ConfigurationError, match="cannot create the store folder"):
        EpisodicMemory(afile, embedder=HashEmbedder())
    assert afile.read_text() == "not a folder"


# -- the server unreachable --------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
# qdrant-client's own version check (a background thread) warns that it got no answer too.
@pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning")
def test_an_unreachable_server_is_a_typed_error_after_retries() -> None:
    port = _closed_port()
    start = time.perf_counter()
    with pytest.raises(EngineUnavailableError, match=r"unreachable after 4 attempts.*check url="):
        EpisodicMemory(url=f"http://127.0.0.1:{port}", embedder=HashEmbedder(), timeout=2)
    # Three retries with backoff 0.2 + 0.4 + 0.8 s: it tried again rather than failing at once.
    assert time.perf_counter() - start >= 1.4
