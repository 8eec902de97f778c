"""An import file that names one episode twice is a bad line, not a silent replacement.

Two lines with the same `point_id` (a hand-edited or concatenated export) were both written:
the report listed the id as imported twice while the store kept only the second line, and
the first line's episode was gone without a word. The repeated line is now reported like
any other bad line: strict imports nothing, skip imports the first and reports the second.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from episodex import EpisodicMemory, ImportFileError
from episodex.testing import HashEmbedder


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _file(point_id: str) -> str:
    first: dict[str, Any] = {
        "point_id": point_id,
        "user_id": "u1",
        "agent_id": "support",
        "conversation_id": "c1",
        "short_summary": "Refund for order 1234",
        "long_summary": "User asked for a refund; the agent issued it.",
    }
    other = {"point_id": str(uuid.uuid4()), **{k: v for k, v in first.items() if k != "point_id"}}
    # The same id again, upper-cased (the same UUID), with other texts.
    second = {**first, "point_id": point_id.upper(), "short_summary": "Address changed"}
    return "\n".join(json.dumps(r) for r in (first, other, second)) + "\n"


async def test_strict_import_refuses_a_repeated_id(memory: EpisodicMemory) -> None:
    point_id = str(uuid.uuid4())
    with pytest.raises(ImportFileError, match="line 3") as caught:
        await memory.import_(io.StringIO(_file(point_id)))
    assert [number for number, _ in caught.value.errors] == [3]
    assert "line 1" in caught.value.errors[0][1]
    assert await memory.count(user_id="u1", agent_id="support") == 0


async def test_skip_import_keeps_the_first_and_reports_the_repeat(
    memory: EpisodicMemory,
) -> None:
    point_id = str(uuid.uuid4())
    report = await memory.import_(io.StringIO(_file(point_id)), errors="skip")
    assert len(report.imported) == len(set(report.imported)) == 2
    assert [number for number, _ in report.skipped] == [3]
    stored = await memory.get(point_id, user_id="u1", agent_id="support")
    assert stored["short_summary_text"] == "Refund for order 1234"
