"""`$EPISODEX_PATH` set but blank is refused; it never means "the default store".

`--path ""` and `location=""` were already refused (`test_audit29_empty_store_place.py`), but
an empty `$EPISODEX_PATH` was read as unset: `EPISODEX_PATH=$STORE episodex forget ... --all`
with `$STORE` empty deleted in the default store, and `EpisodicMemory()` opened it. Both now
refuse with a `ConfigurationError` naming the variable, and the default store is left as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory
from episodex.cli import main

IDS = ["--user", "u", "--agent", "a"]


@pytest.fixture
def default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default store (under a data folder of the test's own), holding one episode."""
    monkeypatch.delenv("EPISODEX_PATH", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    args = ["add", *IDS, "--conversation", "c", "--short", "s", "--long", "l"]
    assert main(args) == 0
    store = tmp_path / "data" / "episodex" / "memory"
    assert store.is_dir()
    return store


def _episodes(store: Path) -> int:
    with SyncEpisodicMemory(store) as memory:
        return memory.count(user_id="u", agent_id="a")


@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_store_variable_deletes_nothing_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    default_store: Path,
    value: str,
) -> None:
    monkeypatch.setenv("EPISODEX_PATH", value)
    capsys.readouterr()
    code = main(["forget", *IDS, "--all"])
    out, err = capsys.readouterr()
    assert code != 0
    assert out == "" and "$EPISODEX_PATH is set but empty" in err and "Traceback" not in err
    monkeypatch.delenv("EPISODEX_PATH")
    assert _episodes(default_store) == 1


@pytest.mark.parametrize("value", ["", " \t"])
def test_a_blank_store_variable_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, default_store: Path, value: str
) -> None:
    monkeypatch.setenv("EPISODEX_PATH", value)
    with pytest.raises(ConfigurationError, match="EPISODEX_PATH"):
        EpisodicMemory()
    monkeypatch.delenv("EPISODEX_PATH")
    assert _episodes(default_store) == 1
