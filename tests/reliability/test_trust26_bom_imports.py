"""Every import reads a file that starts with a UTF-8 byte order mark.

Notepad, Excel ("CSV UTF-8") and PowerShell's `Out-File` write one in front of UTF-8 text.
Read with `encoding="utf-8"` it becomes a U+FEFF character: `import_memories` then refused a
JSON export ("Unexpected UTF-8 BOM") and a csv one (its first column was `\\ufeffid`, so the
header was "not a step-memory export"), and an episode import (the API and `episodex import`)
or `episodex add --from-json` refused the first record. The mark is now read as what it is.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    Episode,
    JSONLTaskStore,
    StepMemory,
    SyncEpisodicMemory,
    Task,
    TaskResult,
    export_memories,
    import_memories,
)
from episodex.cli import main
from episodex.testing import HashEmbedder

BOM = "\ufeff"


def _step() -> StepMemory:
    return StepMemory.parse(
        {
            "step_id": "rep1-step1",
            "user_id": "u1",
            "agent_id": "web",
            "session_id": "ticket-7",
            "run_id": "run-1",
            "rep": 1,
            "step_num": 1,
            "env_pre": {"url": "https://app.test/tickets?id=7", "elements": []},
            "internal_state": "Goal: set ticket 7 to High",
            "action": "click('12')",
        }
    )


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_lesson_export_saved_with_a_bom_imports(fmt: str, tmp_path: Path) -> None:
    step = _step()
    path = tmp_path / f"steps.{fmt}"
    path.write_text(export_memories([step], fmt), encoding="utf-8-sig")  # type: ignore[arg-type]
    # What a caller who opens the file as UTF-8 hands over: the text with U+FEFF in front.
    text = path.read_text(encoding="utf-8")
    assert text.startswith(BOM)
    back = import_memories(text, fmt)  # type: ignore[arg-type]
    assert [m.model_dump() for m in back] == [step.model_dump()]


def _record(n: int) -> dict[str, Any]:
    return {
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": "c",
        "short_summary": f"refund for order {n}",
        "long_summary": f"the user got a refund for order {n}",
        "end_index": 1,
    }


def _jsonl(n: int) -> str:
    return "".join(json.dumps(_record(i)) + "\n" for i in range(n))


@pytest.mark.parametrize("source", ["path", "bytes", "text"])
def test_an_episode_export_with_a_bom_imports(source: str, tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_text(_jsonl(3), encoding="utf-8-sig")
    given: Any = {
        "path": path,
        "bytes": io.BytesIO(path.read_bytes()),
        "text": io.StringIO(path.read_text(encoding="utf-8")),
    }[source]
    memory = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        report = memory.import_(given)
        assert (len(report.imported), report.skipped) == (3, [])
        assert memory.count(user_id="u", agent_id="a") == 3
    finally:
        memory.close()


def test_the_cli_reads_files_with_a_bom(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text(_jsonl(2), encoding="utf-8-sig")
    assert main(["--path", store, "import", str(episodes)]) == 0
    assert "imported 2 episode(s)" in capsys.readouterr().out
    one = tmp_path / "one.json"
    one.write_text(json.dumps(_record(9)), encoding="utf-8-sig")
    assert main(["--path", store, "add", "--from-json", str(one)]) == 0
    capsys.readouterr()
    assert main(["--path", store, "export", "--user", "u", "--agent", "a"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert sorted(r["short_summary"] for r in exported) == [
        "refund for order 0",
        "refund for order 1",
        "refund for order 9",
    ]


async def test_a_jsonl_task_store_file_saved_with_a_bom_opens(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path)
    task = Task(instruction="Convert 3 miles to km")
    await store.write(Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km")))
    store.close()
    # The file as an editor saves it: a byte order mark in front of the first record.
    store.path.write_bytes(BOM.encode() + store.path.read_bytes())
    reopened = JSONLTaskStore(tmp_path)
    try:
        assert await reopened.count() == 1
        hits = await reopened.search("3 miles in km", k=1)
        result = hits[0].result
        assert result is not None and result.content == "4.83 km"
    finally:
        reopened.close()
