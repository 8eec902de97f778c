"""Export, import, re-index and recall arguments of the wrong kind are typed errors, up front.

An export destination that is not a text file (an int, None, a binary file) raised a raw
`AttributeError` or `TypeError` at the first record, and with nothing to export was not noticed
at all; an import source without `read()` raised `AttributeError`; an `on_progress` that is
not a function raised `TypeError` after the first batch was embedded (a re-index had started
its staging collection by then); `user_id=5` for an import silently turned every line into a
bad line; `with_stream_ranks="no"` was read as True; and a `recall_block` encoding that is
neither a name nor a function raised `TypeError`. Each is now a `ValidationError` (or, for the
encoding, the `ConfigurationError` an unknown encoding name gets) before any work, and the
store is unchanged.
"""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory, ValidationError

from ._support import SEED_EPISODE, TENANT, seeded_memory, snapshot

T = TENANT
EPISODE = SEED_EPISODE


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    with seeded_memory(tmp_path / "m") as mem:
        yield mem


DESTINATIONS: list[tuple[str, Callable[[Path], Any], str]] = [
    ("int", lambda _: 5, "a path or a file open for writing, got int"),
    ("None", lambda _: None, "a path or a file open for writing, got NoneType"),
    ("BytesIO", lambda _: io.BytesIO(), "open the file in text mode"),
    ("binary file", lambda path: path.open("wb"), "open the file in text mode"),
]


@pytest.mark.parametrize(
    ("make", "match"), [c[1:] for c in DESTINATIONS], ids=[c[0] for c in DESTINATIONS]
)
@pytest.mark.parametrize("user", ["u", "nobody"], ids=["episodes", "no episodes"])
async def test_an_export_destination_that_is_not_a_text_file(
    memory: EpisodicMemory, tmp_path: Path, make: Callable[[Path], Any], match: str, user: str
) -> None:
    destination = make(tmp_path / "out.jsonl")
    try:
        with pytest.raises(ValidationError, match=match):
            await memory.export(destination, user_id=user, agent_id="a")
    finally:
        if hasattr(destination, "close"):
            destination.close()
    if isinstance(destination, io.BufferedWriter):
        assert (tmp_path / "out.jsonl").read_bytes() == b""


class _ReadsAList:
    def read(self) -> list[str]:
        return [json.dumps(EPISODE)]


CALLS: list[tuple[str, Callable[[EpisodicMemory], Awaitable[Any]], str]] = [
    ("import None", lambda m: m.import_(None), "a path or an open file, got NoneType"),  # pyright: ignore[reportArgumentType]
    (
        "import a list",
        lambda m: m.import_([json.dumps(EPISODE)]),  # pyright: ignore[reportArgumentType]
        "a path or an open file, got list",
    ),
    ("read gives a list", lambda m: m.import_(_ReadsAList()), r"read\(\) gave list"),  # pyright: ignore[reportArgumentType]
    (
        "import on_progress",
        lambda m: m.import_(io.StringIO(json.dumps(EPISODE)), on_progress=5),  # pyright: ignore[reportArgumentType]
        "on_progress must be a function or None, got 5",
    ),
    (
        "import user_id",
        lambda m: m.import_(io.StringIO(json.dumps(EPISODE)), user_id=5),  # pyright: ignore[reportArgumentType]
        "user_id must be a non-empty string",
    ),
    (
        "import agent_id",
        lambda m: m.import_(io.StringIO(json.dumps(EPISODE)), agent_id=""),
        "agent_id must be a non-empty string",
    ),
    (
        "reindex on_progress",
        lambda m: m.reindex(on_progress=5),  # pyright: ignore[reportArgumentType]
        "on_progress must be a function or None",
    ),
    (
        "with_stream_ranks",
        lambda m: m.recall(**T, query="refund", with_stream_ranks="no"),  # pyright: ignore[reportArgumentType]
        "with_stream_ranks must be True or False, got 'no'",
    ),
]


@pytest.mark.parametrize(("call", "match"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
async def test_an_argument_of_the_wrong_kind_is_refused_before_any_work(
    memory: EpisodicMemory, tmp_path: Path, call: Callable[[EpisodicMemory], Any], match: str
) -> None:
    before = snapshot(memory)
    with pytest.raises(ValidationError, match=match):
        await call(memory)
    assert snapshot(memory) == before
    # No re-index staging collection was started either.
    assert [p.name for p in (tmp_path / "m").iterdir() if "_reindex_" in p.name] == []


@pytest.mark.parametrize("encoding", [["cl100k_base"], 5, None])
async def test_a_block_encoding_that_is_neither_a_name_nor_a_function(
    memory: EpisodicMemory, encoding: Any
) -> None:
    with pytest.raises(ConfigurationError, match="encoding must be a tiktoken encoding name"):
        await memory.recall_block(**T, query="refund", max_tokens=200, encoding=encoding)
