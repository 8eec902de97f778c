"""A JSON number longer than Python reads is a bad line, not a failed command.

Python refuses to turn more than 4,300 digits into an int (`sys.set_int_max_str_digits`),
and `json.loads` let that `ValueError` through. One such line made `episodex import
--skip-errors` fail whole, with advice about `sys.set_int_max_str_digits`, instead of
importing the other lines; `--from-json` and `--metadata` said the same, and
`import_memories` raised the raw `ValueError` (and a `RecursionError` for a camelCase state
of deeply nested JSON text) instead of `ImportFileError` (or, for the state, reading it as
any other text that is not JSON).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from episodex import ImportFileError, import_memories
from episodex.cli import main

_LONG = "9" * 5000


def _line(n: int) -> str:
    return json.dumps(
        {
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": f"c{n}",
            "short_summary": f"short {n}",
            "long_summary": f"long {n}",
        }
    )


def _long_number_line() -> str:
    return _line(9)[:-1] + f', "start_index": {_LONG}}}'


def test_skip_errors_imports_around_a_line_with_a_too_long_number(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([_line(1), _long_number_line(), _line(2)]) + "\n")
    store = tmp_path / "store"
    command = ["--path", str(store), "--json", "import", "--skip-errors", str(source)]
    done = subprocess.run(
        [sys.executable, "-m", "episodex", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["imported"] == 2
    [(line, why)] = report["skipped"]
    assert line == 2
    assert "not JSON" in why
    assert "set_int_max_str_digits" not in why
    assert "Traceback" not in done.stderr


def test_a_strict_import_names_the_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(_line(1) + "\n" + _long_number_line() + "\n")
    code = main(["--path", str(tmp_path / "store"), "import", str(source)])
    err = capsys.readouterr().err
    assert code == 2
    assert "1 bad line(s), nothing imported: line 2: not JSON" in err


def test_from_json_and_metadata_say_not_valid_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "one.json"
    source.write_text(_long_number_line())
    store = ["--path", str(tmp_path / "store")]
    assert main([*store, "add", "--from-json", str(source)]) == 2
    assert "--from-json is not valid JSON" in capsys.readouterr().err
    ids = ["--user", "u", "--agent", "a", "--conversation", "c", "--short", "s", "--long", "l"]
    assert main([*store, "add", *ids, "--metadata", f'{{"n": {_LONG}}}']) == 2
    assert "--metadata is not valid JSON" in capsys.readouterr().err


def _camel(**fields: object) -> dict[str, object]:
    record: dict[str, object] = {
        "id": 1,
        "stepId": "s1",
        "userId": "u",
        "agentId": "a",
        "sessionId": "s",
        "runId": "r",
        "rep": 1,
        "stepNum": 1,
        "envPre": {"url": "https://app.test/"},
        "internalState": "state",
        "action": "click('1')",
    }
    record.update(fields)
    return record


def test_import_memories_reports_a_too_long_number_as_a_bad_file() -> None:
    text = json.dumps([_camel()])[:-2] + f', "extra": {_LONG}}}]'
    with pytest.raises(ImportFileError, match="not JSON"):
        import_memories(text)


@pytest.mark.parametrize(
    "state", [f'{{"n": {_LONG}}}', "[" * 100_000 + "]" * 100_000], ids=["long", "deep"]
)
def test_a_camel_state_of_unreadable_json_text_is_read_as_other_text(state: str) -> None:
    # A state that is text but not JSON is kept as the page's url, whatever makes it unreadable.
    [memory] = import_memories(json.dumps([_camel(envPre=state)]))
    assert memory.env_pre is not None
    assert memory.env_pre.url == state
