"""One stored episode that cannot be read back must not cost its user every other read.

`memorize` refuses what could not be read back (test_audit30_unreadable_times), but a store
written before that fix, by another program or by an older release may already hold such a
point: a time no `datetime` holds (year 10000, 1e300, NaN, infinity, a string, missing), a
field of the wrong type (tools that are a number or a string, flows that are objects, speakers
that are numbers, metadata that is a list, a summary or an index of the wrong type), a missing
conversation id. Every `recall`, `recall_block`, `read_recent`, `stats` and `export` of that
user and agent then raised a raw `OverflowError`, `ValueError`, `TypeError` or `KeyError` (or,
for a few, passed the wrong type on). Now:

- reads (`recall`, `recall_block`, `read_recent`, `stats`) leave the point out, log it once
  with its id, and still fill their limit from the other episodes;
- `get` of that very point raises `EngineError` naming it (leaving it out would say it is not
  there);
- `export` writes it as stored (nothing is lost) and logs it; importing the file reports its
  line as a bad line and imports the others with `errors="skip"`.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from episodex import EngineError, EpisodicMemory, ImportFileError
from episodex.plan import Filter, Match, Point
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory, parse_export

USER: dict[str, Any] = {"user_id": "u", "agent_id": "a"}
#: What another program or an older release may have stored (None: the field is missing).
BAD: dict[str, dict[str, Any]] = {
    "year-10000": {"timestamp_end": 253402300800.0},
    "time-1e300": {"timestamp_end": 1e300},
    "time-text": {"timestamp_begin": "yesterday"},
    "time-missing": {"timestamp_end": None},
    "tools-number": {"tools_invoked": 5},
    "tools-text": {"tools_invoked": "search"},
    "flows-objects": {"flows_activated": [{"name": "refund"}]},
    "speakers-numbers": {"speakers": [1, 2]},
    "metadata-list": {"metadata": [1, 2]},
    "sentiment-text": {"average_user_sentiment": "high"},
    "summary-number": {"short_summary_text": 5},
    "index-text": {"start_index": "3"},
    "conversation-missing": {"conversation_id": None},
}
#: Qdrant Edge refuses to store these; qdrant-client `:memory:` keeps them.
NOT_FINITE: dict[str, dict[str, Any]] = {
    "time-nan": {"timestamp_end": float("nan")},
    "time-inf": {"timestamp_begin": float("inf")},
}
STATS_FIELDS = {
    "conversation_id", "flows_activated", "tools_invoked", "timestamp_begin", "timestamp_end",
    "average_user_sentiment",
}  # fmt: skip
CASES = [
    pytest.param(backend, fields, id=f"{backend}-{name}")
    for backend in BACKENDS
    for name, fields in {**BAD, **(NOT_FINITE if backend == "memory" else {})}.items()
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


def _store_bad(memory: EpisodicMemory, fields: dict[str, Any]) -> str:
    """Store a good episode, then overwrite its payload as another program might; its id."""
    memory.store.memorize_many(
        [{**USER, "short_summary": "kettle refund", "long_summary": "kettle refund issued",
          "conversation_id": "bad", "timestamp_end": "2030-01-01T00:00:00"}]
    )  # fmt: skip
    flt = Filter(must=(Match("conversation_id", "bad"),))
    (hit,), _ = memory.engine.scroll("episodes", flt, limit=1)
    payload = {**hit.payload, **fields}
    payload = {k: v for k, v in payload.items() if v is not None or k not in fields}
    ((dense, sparse),) = memory.store.vectors([("kettle refund", "kettle refund issued")])
    point = Point(id=hit.id, dense=dense, sparse=sparse, payload=payload)
    memory.engine.upsert("episodes", [point])
    return hit.id


@pytest.fixture
def memory(request: pytest.FixtureRequest, folder: Path) -> Iterator[EpisodicMemory]:
    with open_memory(request.param, folder, embedder=HashEmbedder(), splade=False) as mem:
        yield mem


def _warnings(caplog: pytest.LogCaptureFixture, point_id: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if point_id in r.getMessage()]


@pytest.mark.parametrize(("memory", "fields"), CASES, indirect=["memory"])
async def test_reads_leave_an_unreadable_episode_out_and_keep_the_others(
    memory: EpisodicMemory, fields: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    good = await memory.memorize(
        **USER, short_summary="kettle refund promised", long_summary="a kettle refund was promised",
        conversation_id="good", timestamp_end=datetime(2020, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    bad = _store_bad(memory, fields)
    caplog.set_level(logging.WARNING, logger="episodex")
    for _ in range(2):  # logged once, however often it is read
        result = await memory.recall(**USER, query="kettle refund", previous_conversation_limit=1)
        assert [i["point_id"] for i in result["previous_conversations"]] == [good]
        plain = await memory.recall(
            **USER, query="kettle refund", previous_conversation_limit=1, with_stream_ranks=False
        )
        assert [i["point_id"] for i in plain["previous_conversations"]] == [good]
        block = await memory.recall_block(**USER, query="kettle refund")
        assert good in block and bad not in block
        # The bad episode ends last: read_recent(1) still gives the newest it can read.
        assert [i["point_id"] for i in await memory.read_recent(1, **USER)] == [good]
        # stats reads a few fields: it leaves the episode out when one of those is bad.
        stats = await memory.stats(**USER)
        assert stats["episodes"] == (1 if set(fields) & STATS_FIELDS else 2)
        assert stats["first_episode_at"].year == 2020
    assert (await memory.get(good, **USER))["conversation_id"] == "good"
    with pytest.raises(EngineError, match=rf"episode '{bad}' is stored but cannot be read back"):
        await memory.get(bad, **USER)
    (read_warning,) = _warnings(caplog, bad)
    assert "reads leave it out" in read_warning
    assert await memory.count(**USER) == 2  # left out of reads, not deleted


@pytest.mark.parametrize(("memory", "fields"), CASES, indirect=["memory"])
async def test_export_writes_an_unreadable_episode_as_stored(
    memory: EpisodicMemory, fields: dict[str, Any], caplog: pytest.LogCaptureFixture, folder: Path
) -> None:
    good = await memory.memorize(
        **USER, short_summary="kettle refund promised", long_summary="a kettle refund was promised",
        conversation_id="good",
    )  # fmt: skip
    bad = _store_bad(memory, fields)
    caplog.set_level(logging.WARNING, logger="episodex")
    out = io.StringIO()
    assert await memory.export(out, **USER) == 2
    records = {r["point_id"]: r for r in parse_export(out.getvalue())}
    assert set(records) == {good, bad}
    names = {"short_summary_text": "short_summary", "long_summary_text": "long_summary"}
    for field, value in fields.items():
        name = names.get(field, field)
        if value is None:
            assert name not in records[bad]
        elif isinstance(value, float) and value != value:  # NaN
            assert records[bad][name] != records[bad][name]
        else:
            assert records[bad][name] == value
    assert any("export writes it as stored" in w for w in _warnings(caplog, bad))
    # The file reads back: the bad line is reported, the good one imported (a missing
    # timestamp_end is one import fills in, as memorize does: the episode is whole again).
    with open_memory("memory", folder, embedder=HashEmbedder(), splade=False) as other:
        if fields == {"timestamp_end": None}:
            report = await other.import_(io.StringIO(out.getvalue()))
            assert sorted(report.imported) == sorted([good, bad])
            return
        with pytest.raises(ImportFileError, match=r"1 bad line"):
            await other.import_(io.StringIO(out.getvalue()))
        report = await other.import_(io.StringIO(out.getvalue()), errors="skip")
        assert report.imported == [good]
        ((line, _),) = report.skipped
        assert re.search(bad, out.getvalue().splitlines()[line - 1])


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_older_payload_without_the_optional_fields_is_read_and_exported(
    backend: str, folder: Path
) -> None:
    with open_memory(backend, folder, embedder=HashEmbedder(), splade=False) as memory:
        missing: dict[str, Any] = dict.fromkeys(
            ("start_index", "end_index", "overlap", "flows_activated", "tools_invoked",
             "speakers", "average_user_sentiment", "user_sentiment_variance", "metadata",
             "created_at")
        )  # fmt: skip
        point_id = _store_bad(memory, missing)
        # Read as stored (the fields stay missing), not left out.
        item = await memory.get(point_id, **USER)
        assert "tools_invoked" not in item and "metadata" not in item
        assert [i["point_id"] for i in await memory.read_recent(5, **USER)] == [point_id]
        assert (await memory.stats(**USER))["episodes"] == 1
        # Exported with what memorize stores for them (export raised KeyError).
        out = io.StringIO()
        await memory.export(out, **USER)
        (record,) = parse_export(out.getvalue())
        assert record["tools_invoked"] == [] and record["metadata"] == {}
        assert (record["start_index"], record["end_index"], record["overlap"]) == (0, 0, 0)
        assert record["average_user_sentiment"] is None
