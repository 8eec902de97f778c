"""A whole record on a JSONL task store's last line is never set aside as torn.

Opening the store moves a torn last line (a strict prefix of a record, what a crash leaves) to
a side file and cuts it from the store file. It took any last line the JSON reader refused for
torn, so a whole record it cannot read (nested thousands of levels deep, a number of more
digits than Python reads, a key named twice: a hand edit or another program's line) was cut
from the store with only a log warning, where the same line anywhere else raises
`StoreFileError` and leaves the file as it is. Such a line is now a bad line like those.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import Episode, JSONLTaskStore, StoreFileError, Task

#: How a whole record line is made unreadable: (what is put in front of its closing `}`,
#: what its opening `{` is followed by).
UNREADABLE: dict[str, tuple[str, str]] = {
    "nested too deeply": (',"x":' + "[" * 5000 + "]" * 5000, ""),
    "a number too long": (',"x":' + "9" * 5000, ""),
    "a key named twice": ("", '"op":"write",'),
    "a trailing comma": (",", ""),
}


async def _store_file(tmp_path: Path) -> tuple[Path, list[bytes]]:
    store = JSONLTaskStore(tmp_path)
    for i in range(3):
        await store.write(Episode(id_=f"e{i}", task=Task(instruction=f"task {i}")))
    store.close()
    return store.path, store.path.read_bytes().split(b"\n")[:-1]


def _spoiled(line: bytes, how: tuple[str, str]) -> bytes:
    before_close, after_open = how
    assert line.startswith(b"{") and line.endswith(b"}")
    return b"{" + after_open.encode() + line[1:-1] + before_close.encode() + b"}"


@pytest.mark.parametrize("final_newline", [False, True], ids=["no-newline", "newline"])
@pytest.mark.parametrize("how", UNREADABLE.values(), ids=list(UNREADABLE))
async def test_a_whole_unreadable_last_line_is_a_bad_line_and_changes_nothing(
    tmp_path: Path, how: tuple[str, str], *, final_newline: bool
) -> None:
    path, lines = await _store_file(tmp_path)
    lines[-1] = _spoiled(lines[-1], how)
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    before = path.read_bytes()

    with pytest.raises(StoreFileError, match="bad line") as info:
        JSONLTaskStore(tmp_path)
    assert [n for n, _ in info.value.errors] == [3]
    assert path.read_bytes() == before  # not cut: the record is still there to fix
    assert not path.with_name(path.name + ".torn").exists()


async def test_every_prefix_of_an_unreadable_line_is_still_torn(tmp_path: Path) -> None:
    path, lines = await _store_file(tmp_path)
    whole = b"".join(line + b"\n" for line in lines)
    record = _spoiled(lines[0], UNREADABLE["nested too deeply"])
    for cut in (1, 40, len(record) // 2, len(record) - 1):
        path.write_bytes(whole + record[:cut])
        reopened = JSONLTaskStore(tmp_path)
        assert [t.text.encode() for t in reopened.torn_lines] == [record[:cut]]
        assert await reopened.count() == 3
        assert path.read_bytes() == whole
        reopened.close()
