"""An integer too large to be a float is refused with a typed error, not a raw `OverflowError`.

Every check of a user's number asked `math.isfinite(value)`, which raises `OverflowError` for
an int beyond a float's range (`10**400`) instead of answering. So a recall weight or
`conversation_diversity`, an episode's sentiment (in `memorize`, an import line, `episodex add
--from-json`), an item filter's operand, a working-memory tag weight, a task store's
`score_threshold`, a BM25 parameter or a LangGraph store weight of that size escaped
episodex's error tree; the command line printed a traceback, and one such line in a file made
an import fail whole instead of being a bad line. Each is now refused as a number out of range,
with the check's own error, and nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    Bm25Encoder,
    ConfigurationError,
    EpisodicMemory,
    ImportFileError,
    ItemPut,
    ItemRef,
    ItemStore,
    MemKey,
    QdrantTaskStore,
    ValidationError,
    WorkingMemory,
)
from episodex.cli import main
from episodex.testing import HashEmbedder

from ._support import SEED_EPISODE, TENANT, seeded_memory, snapshot

HUGE = 10**400
T = TENANT
EPISODE = SEED_EPISODE


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    with seeded_memory(tmp_path / "m") as mem:
        yield mem


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ("short_weight", "short_weight must be a finite number >= 0"),
        ("bm25_weight", "bm25_weight must be a finite number >= 0"),
        ("dated_weight", "dated_weight must be a finite number >= 0"),
        ("conversation_diversity", r"conversation_diversity must be a number in \[0, 1\)"),
    ],
)
async def test_a_huge_integer_recall_option_is_a_validation_error(
    memory: EpisodicMemory, option: str, match: str
) -> None:
    with pytest.raises(ValidationError, match=match):
        await memory.recall(**T, query="refund", **{option: HUGE})  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("field", ["average_user_sentiment", "user_sentiment_variance"])
async def test_a_huge_integer_sentiment_is_refused_and_nothing_is_stored(
    memory: EpisodicMemory, field: str
) -> None:
    before = snapshot(memory)
    with pytest.raises(ValidationError, match=f"{field}: must be a finite number"):
        await memory.memorize(**{**EPISODE, field: HUGE})  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError, match=f"episode 1: .*{field}"):
        await memory.memorize_many([EPISODE, {**EPISODE, field: HUGE}])
    assert snapshot(memory) == before


async def test_an_import_line_with_a_huge_integer_is_a_bad_line(
    memory: EpisodicMemory, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({**EPISODE, "conversation_id": "c2"})
        + "\n"
        + json.dumps({**EPISODE, "average_user_sentiment": HUGE})
        + "\n"
    )
    before = snapshot(memory)
    with pytest.raises(ImportFileError, match=r"line 2: .*average_user_sentiment") as info:
        await memory.import_(source)
    assert [n for n, _ in info.value.errors] == [2]
    assert snapshot(memory) == before
    report = await memory.import_(source, errors="skip")
    assert len(report.imported) == 1 and [n for n, _ in report.skipped] == [2]


def test_the_command_line_refuses_a_huge_integer_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = tmp_path / "e.json"
    record.write_text(json.dumps({**EPISODE, "user_sentiment_variance": HUGE}))
    code = main(["--path", str(tmp_path / "s"), "add", "--from-json", str(record)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("episodex: error: ") and err.count("\n") == 1, err
    assert "user_sentiment_variance" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "flt", [{"n": HUGE}, {"n": {"$gt": HUGE}}, {"n": {"$lte": -HUGE}}, {"n": {"$ne": HUGE}}]
)
def test_an_item_filter_with_a_huge_integer_is_a_validation_error(
    memory: EpisodicMemory, flt: dict[str, Any]
) -> None:
    items = ItemStore(memory.engine, memory.embedder)
    items.write([ItemPut(ItemRef("u", "a", ("notes",), "k"), {"n": 1})])
    # Ranges compare as numbers (finite only); equality exactly (64-bit integers only).
    with pytest.raises(ValidationError, match=r"filter on 'n': .*(finite number|64-bit range)"):
        items.search(**T, filter=flt)


def test_a_huge_integer_tag_weight_is_a_validation_error() -> None:
    wm = WorkingMemory()
    wm.store("find the key", MemKey.THOUGHT)
    with pytest.raises(ValidationError, match="must be a finite number"):
        wm.retrieve({MemKey.THOUGHT: HUGE})


async def test_a_huge_integer_score_threshold_is_a_validation_error(tmp_path: Path) -> None:
    store = QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
    try:
        with pytest.raises(ValidationError, match="score_threshold must be a finite number"):
            await store.search("convert miles", 3, score_threshold=HUGE)
    finally:
        store.close()


@pytest.mark.parametrize("name", ["k", "b", "avg_len"])
def test_a_huge_integer_bm25_parameter_is_a_configuration_error(name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"BM25 {name} must be a finite number"):
        Bm25Encoder(**{name: HUGE})
