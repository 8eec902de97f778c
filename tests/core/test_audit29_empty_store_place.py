"""A store place given empty is refused; it never means "the default store".

`episodex --path "$STORE" forget ... --all` with `$STORE` unset ran on the default store and
deleted there (`--path ""` and `--url ""` were read as left out, `export -o ""` wrote to
stdout), and `EpisodicMemory(url="")` or `location=""` opened the default embedded store in
place of the server meant. Each now exits 2 (the command line) or raises
`ConfigurationError`, and the default store is left as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConfigurationError, EpisodicMemory, SyncEpisodicMemory
from episodex.cli import main
from episodex.testing import HashEmbedder

IDS = ["--user", "u", "--agent", "a"]


@pytest.fixture
def default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default store, holding one episode of u with a."""
    store = tmp_path / "default"
    monkeypatch.setenv("EPISODEX_PATH", str(store))
    args = ["add", *IDS, "--conversation", "c", "--short", "s", "--long", "l"]
    assert main(["--path", str(store), *args]) == 0
    return store


def _episodes(store: Path) -> int:
    with SyncEpisodicMemory(store) as memory:
        return memory.count(user_id="u", agent_id="a")


@pytest.mark.parametrize(
    "argv",
    [
        ["--path", "", "forget", *IDS, "--all"],
        ["forget", *IDS, "--all", "--path", " "],
        ["--url", "", "forget", *IDS, "--all"],
        ["--path", "", "stats", *IDS],
        ["export", *IDS, "--output", ""],
    ],
)
def test_an_empty_place_on_the_command_line_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], default_store: Path, argv: list[str]
) -> None:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    assert info.value.code == 2
    assert out == "" and "is empty" in err and "Traceback" not in err
    assert _episodes(default_store) == 1


@pytest.mark.parametrize("place", [{"url": ""}, {"location": ""}, {"path": ""}, {"url": "  "}])
def test_an_empty_place_in_python_is_a_configuration_error(
    default_store: Path, place: dict[str, str]
) -> None:
    with pytest.raises(ConfigurationError, match=f"{next(iter(place))}= is empty"):
        EpisodicMemory(**place, embedder=HashEmbedder(dimension=8), splade=False)  # pyright: ignore[reportArgumentType]
    assert _episodes(default_store) == 1
