"""A JSONL task store's last line that is a whole JSON record, but not a valid one, is a bad line.

Opening the store moves a torn last line (a write cut short by a crash) to a side file and cuts
it from the store file. A crash can only leave a strict prefix of a record, and no prefix of a
JSON object is a whole JSON document; but any whole record on the last line that failed
validation (a blank instruction, another tenant's record, an unknown op: a hand edit saved
without a final newline, or a file written by something else) was treated the same way: cut
from the store with only a log warning, where the same line anywhere else raises
`StoreFileError` and leaves the file as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from episodex import Episode, JSONLTaskStore, StoreFileError, Task


def _edited(record: dict[str, Any], case: str) -> dict[str, Any]:
    if case == "blank instruction":
        record["episode"]["task"]["instruction"] = "   "
    elif case == "another tenant":
        record["user_id"] = "someone else"
    else:
        record["op"] = "upsert"
    return record


@pytest.mark.parametrize("case", ["blank instruction", "another tenant", "unknown op"])
async def test_a_whole_but_invalid_last_line_raises_and_changes_nothing(
    tmp_path: Path, case: str
) -> None:
    store = JSONLTaskStore(tmp_path)
    for i in range(3):
        await store.write(Episode(id_=f"e{i}", task=Task(instruction=f"task {i}")))
    store.close()
    lines = store.path.read_text(encoding="utf-8").splitlines()
    last = _edited(json.loads(lines[-1]), case)
    # Hand-edited and saved without a final newline, as many editors do.
    store.path.write_text("\n".join([*lines[:-1], json.dumps(last)]), encoding="utf-8")
    before = store.path.read_bytes()

    with pytest.raises(StoreFileError, match="bad line") as info:
        JSONLTaskStore(tmp_path)
    assert [n for n, _ in info.value.errors] == [3]
    assert store.path.read_bytes() == before  # not cut: the record is still there to fix
    assert not store.path.with_name(store.path.name + ".torn").exists()


async def test_a_torn_last_line_is_still_set_aside(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    for i in range(2):
        await store.write(Episode(id_=f"e{i}", task=Task(instruction=f"task {i}")))
    store.close()
    whole = store.path.read_bytes()
    # Every strict prefix of a record is torn, however far the write got.
    record = whole.split(b"\n")[0]
    for cut in (1, len(record) // 2, len(record) - 1):
        store.path.write_bytes(whole + record[:cut])
        reopened = JSONLTaskStore(tmp_path)
        assert [t.text.encode() for t in reopened.torn_lines] == [record[:cut]]
        assert await reopened.count() == 2
        assert store.path.read_bytes() == whole
        reopened.close()
