"""An import reads its file a chunk at a time, never whole, and stays all or nothing.

`import_` read its whole source with one `read()` (or `Path.read_bytes()`) and split it into a
list of lines, and `episodex import` read the whole file (or stdin) into memory, split it to
check it, and split it again to count it: a big export was held several times over. The file
is now read `READ_CHUNK` at a time (stdin is copied to a temporary file as it is read); a file
of many chunks imports exactly as before, and a bad line in its last chunk still imports
nothing.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import pytest
from episodex import EpisodicMemory, ImportFileError
from episodex._episodes import transfer
from episodex.cli import main
from episodex.testing import HashEmbedder

CHUNK = 512


class CountingReader(io.RawIOBase):
    """A binary file that records how much each `read` asked for and gave."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.asked: list[int] = []
        self.given: list[int] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        self.asked.append(-1 if size is None else size)
        out = self._data.read(size)
        self.given.append(len(out))
        return out

    def readinto(self, buffer: Any) -> int:  # what a BufferedReader over it calls
        out = self.read(len(buffer))
        buffer[: len(out)] = out
        return len(out)


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer, "READ_CHUNK", CHUNK)


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "user_id": "u1",
            "agent_id": "support",
            "conversation_id": f"c{i}",
            "short_summary": f"Refund number {i} \u2028 for order {i:04d}",
            "long_summary": f"User asked for refund {i}; the agent issued it. " * 3,
        }
        for i in range(n)
    ]


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n"
    return b"\xef\xbb\xbf" + text.encode("utf-8")


async def test_a_file_of_many_chunks_is_read_a_chunk_at_a_time(memory: EpisodicMemory) -> None:
    data = _jsonl(_records(40))
    assert len(data) > 20 * CHUNK
    reader = CountingReader(data)
    report = await memory.import_(cast(IO[bytes], reader))
    assert len(report.imported) == 40 and report.skipped == []
    assert set(reader.asked) == {CHUNK}  # never "the rest of the file"
    assert max(reader.given) <= CHUNK
    got = await memory.export(io.StringIO(), user_id="u1", agent_id="support")
    assert got == 40
    stored = io.StringIO()
    await memory.export(stored, user_id="u1", agent_id="support")
    lines = stored.getvalue().split("\n")[:-1]  # U+2028 is inside a summary
    summaries = sorted(json.loads(line)["short_summary"] for line in lines)
    assert summaries == sorted(r["short_summary"] for r in _records(40))


async def test_a_path_of_many_chunks_is_read_a_chunk_at_a_time(
    memory: EpisodicMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(_jsonl(_records(30)))

    def whole(self: Path) -> bytes:
        raise AssertionError(f"{self} read whole")

    monkeypatch.setattr(Path, "read_bytes", whole)
    report = await memory.import_(source)
    assert len(report.imported) == 30
    assert await memory.count(user_id="u1", agent_id="support") == 30


@pytest.mark.parametrize("text", [False, True], ids=["bytes", "text"])
async def test_a_bad_line_in_the_last_chunk_still_imports_nothing(
    memory: EpisodicMemory, text: bool
) -> None:
    data = _jsonl(_records(30)) + b'{"user_id": "u1"\n'
    source: Any = io.StringIO(data.decode("utf-8")) if text else CountingReader(data)
    with pytest.raises(ImportFileError) as caught:
        await memory.import_(source)
    assert [line for line, _ in caught.value.errors] == [31]
    assert await memory.count(user_id="u1", agent_id="support") == 0


def test_the_cli_reads_stdin_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bad last line: the check refuses the file before a store (or a model) is opened.
    reader = CountingReader(_jsonl(_records(30)) + b"[1]\n")
    stdin = io.TextIOWrapper(io.BufferedReader(reader, buffer_size=CHUNK), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    store = tmp_path / "store"
    assert main(["--path", str(store), "import", "-"]) == 2
    assert "line 31" in capsys.readouterr().err
    assert -1 not in reader.asked
    assert max(reader.given) <= CHUNK
    assert not store.exists()
