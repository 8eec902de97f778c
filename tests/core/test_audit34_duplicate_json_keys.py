"""A JSON object naming one key twice is refused, naming the key, wherever user input is read.

`{"user_id": "u", "user_id": "v"}` was read as `{"user_id": "v"}`: `add --from-json`, an
import line, `--metadata` and `import_memories` took the last value without a word, so an
episode could be stored under another user than the one a reader of the file (or a check of
its first value) saw. Each is now bad input, as any other unreadable JSON is: the key is named,
with the line (or row) where the reader names one, and nothing is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodex import ImportFileError, StepMemory, export_memories, import_memories
from episodex._common.validation import read_json
from episodex.cli import main

EPISODE = (
    '"agent_id": "a", "conversation_id": "c", "short_summary": "refund asked", '
    '"long_summary": "the user asked for a refund", "start_index": 0, "end_index": 2'
)
TWICE = '{"user_id": "u", "user_id": "v", ' + EPISODE + "}"


def test_add_from_json_refuses_a_key_given_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "episode.json"
    source.write_text(TWICE, encoding="utf-8")
    store = tmp_path / "store"
    assert main(["--path", str(store), "add", "--from-json", str(source)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("episodex: error: --from-json is not valid JSON: "), err
    assert "duplicate key 'user_id'" in err and "line 1 column 1" in err, err
    assert not store.exists()


def test_add_refuses_metadata_naming_a_key_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    add = ["add", "--user", "u", "--agent", "a", "--conversation", "c", "--short", "s"]
    metadata = '{"tier": "gold", "nested": {"k": 1, "k": 2}}'
    assert main(["--path", str(store), *add, "--long", "l", "--metadata", metadata]) == 2
    err = capsys.readouterr().err
    assert "duplicate key 'k'" in err and "column 28" in err, err
    assert not store.exists()


def test_an_import_line_naming_a_key_twice_is_a_bad_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = '{"user_id": "u", ' + EPISODE + "}"
    source = tmp_path / "in.jsonl"
    source.write_text(good + "\n" + TWICE + "\n", encoding="utf-8")
    store = tmp_path / "store"
    assert main(["--path", str(store), "import", str(source)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "duplicate key 'user_id'" in err, err
    assert not store.exists()

    assert main(["--path", str(store), "--json", "import", "--skip-errors", str(source)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["imported"] == 1
    assert [line for line, _ in report["skipped"]] == [2]
    assert "duplicate key 'user_id'" in report["skipped"][0][1]
    assert main(["--path", str(store), "--json", "stats", "--user", "v", "--agent", "a"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 0


def test_import_memories_names_the_key_given_twice_and_its_line() -> None:
    lesson = StepMemory.parse(
        {
            "step_id": "s1",
            "user_id": "u1",
            "agent_id": "web",
            "session_id": "t",
            "run_id": "r",
            "rep": 1,
            "step_num": 1,
            "env_pre": {"url": "https://app.test/"},
            "internal_state": "Goal: save",
            "action": "click('12')",
        }
    )
    text = export_memories([lesson], "json")
    assert import_memories(text, "json")[0].user_id == "u1"
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if '"user_id"' in line)
    lines.insert(at + 1, lines[at].replace("u1", "u2"))
    with pytest.raises(ImportFileError, match="duplicate key 'user_id'") as caught:
        import_memories("\n".join(lines), "json")
    # The line of the object holding the key twice.
    assert caught.value.errors[0][0] == 2, caught.value.errors


def test_valid_json_reads_as_before() -> None:
    # One key in several objects, at several depths, is not a duplicate.
    text = '{"a": {"a": [{"a": 1}, {"a": 2}]}, "b": {"a": null}}'
    assert read_json(text) == json.loads(text)
    assert read_json(text.encode("utf-8")) == json.loads(text)
    assert read_json('[{"k": 1}, {"k": 1}]') == [{"k": 1}, {"k": 1}]
    assert read_json("{}") == {}
