"""A time that cannot be read back is refused when written, not found out at every later read.

Episode times are stored as UTC epoch seconds (floats, so they index and order). A time in the
last microseconds of year 9999 (`9999-12-31T23:59:59.99999x`) rounds up to a float that is in
year 10000, beyond what Python's `datetime` holds. `memorize`, `memorize_many` and `import_`
accepted it, and from then on every read of the user's episodes that turned it back into a
time raised a raw `ValueError`: `recall`, `recall_block`, `read_recent`, `get`, `stats` and
`export` failed for that user and agent, so the one episode cost them their whole memory and
its backup. Such a time is now refused like any invalid input (`ValidationError`; in an import
a bad line), and nothing is stored.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory, ImportFileError, ValidationError
from episodex.cli import main

from ._support import SEED_EPISODE, TENANT, parse_export, seeded_memory, snapshot

#: The last time of year 9999 a float holds exactly, and times that read back as year 10000.
LAST_GOOD = "9999-12-31T23:59:59.999969+00:00"
UNREADABLE = ["9999-12-31T23:59:59.999999", "9999-12-31T23:59:59.999990+00:00"]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    with seeded_memory(tmp_path / "m") as mem:
        yield mem


async def _reads_work(memory: EpisodicMemory) -> None:
    await memory.recall(**TENANT, query="refund")
    await memory.recall_block(**TENANT, query="refund")
    await memory.read_recent(5, **TENANT)
    await memory.stats(**TENANT)
    out = io.StringIO()
    await memory.export(out, **TENANT)
    assert parse_export(out.getvalue())


@pytest.mark.parametrize("when", UNREADABLE)
@pytest.mark.parametrize("field", ["timestamp_begin", "timestamp_end"])
async def test_a_time_that_would_read_back_as_year_10000_is_refused(
    memory: EpisodicMemory, field: str, when: str
) -> None:
    before = snapshot(memory)
    episode = {**SEED_EPISODE, "timestamp_begin": "9999-12-31T00:00:00", field: when}
    with pytest.raises(ValidationError, match=rf"{field}: .*year 10000"):
        await memory.memorize_many([episode])
    line = json.dumps({**episode, "short_summary": "from a file"})
    with pytest.raises(ImportFileError, match=r"line 2: .*year 10000"):
        await memory.import_(io.StringIO(json.dumps(SEED_EPISODE) + "\n" + line))
    assert snapshot(memory) == before
    await _reads_work(memory)


async def test_the_last_storable_time_round_trips(memory: EpisodicMemory) -> None:
    point = await memory.memorize_many([{**SEED_EPISODE, "timestamp_end": LAST_GOOD}])
    await _reads_work(memory)
    item = await memory.get(point[0], **TENANT)
    assert item is not None and item["timestamp_end"].isoformat() == LAST_GOOD
    out = io.StringIO()
    await memory.export(out, **TENANT)
    [record] = [r for r in parse_export(out.getvalue()) if r["point_id"] == point[0]]
    assert record["timestamp_end"] == LAST_GOOD


def test_the_command_line_refuses_it_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    episode = json.dumps({**SEED_EPISODE, "timestamp_end": UNREADABLE[0]})
    (tmp_path / "e.json").write_text(episode)
    code = main(["--path", str(tmp_path / "s"), "add", "--from-json", str(tmp_path / "e.json")])
    assert code == 2
    assert "year 10000" in capsys.readouterr().err
