"""`episodex forget --all` asks before deleting everything when a person is at the terminal.

It deleted every episode of the user and agent at once, without a question: one mistyped
command line (the wrong --user, or --all for --conversation) lost them all. At a terminal it
now says how many it would delete and asks; only "y" or "yes" deletes, anything else (Enter,
Ctrl-D) deletes nothing and exits 1. `--yes` skips the question, and a script (stdin not a
terminal) deletes without one, as before.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from episodex.cli import main

IDS = ("--user", "u", "--agent", "a")


class Terminal(io.StringIO):
    """Standard input at a terminal, holding what the person types."""

    def __init__(self, typed: str) -> None:
        super().__init__(typed)
        self.read_lines = 0

    def isatty(self) -> bool:
        return True

    def readline(self, size: int = -1, /) -> str:
        self.read_lines += 1
        return super().readline(size)


class NoQuestions(Terminal):
    """A terminal where nothing may be asked."""

    def readline(self, size: int = -1, /) -> str:
        raise AssertionError("forget asked a question it should not have")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    path = str(tmp_path / "store")
    for i in range(2):
        code, _, err = run(
            capsys,
            "--path",
            path,
            "add",
            *IDS,
            "--conversation",
            "c",
            "--short",
            f"refund {i}",
            "--long",
            f"order {i}",
        )
        assert code == 0, err
    return path


def stored(capsys: pytest.CaptureFixture[str], store: str) -> int:
    code, out, _ = run(capsys, "--path", store, "export", *IDS)
    assert code == 0
    return len(out.splitlines())


@pytest.mark.parametrize("typed", ["n\n", "\n", "", "no\n", "yess\n"])
def test_forget_all_at_a_terminal_deletes_nothing_unless_confirmed(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    store: str,
    typed: str,
) -> None:
    terminal = Terminal(typed)
    monkeypatch.setattr("sys.stdin", terminal)
    code, out, err = run(capsys, "--path", store, "forget", *IDS, "--all")
    assert (code, out) == (1, "")
    assert "delete all 2 episode(s) of user 'u' with agent 'a'? [y/N]" in err
    assert "nothing deleted" in err
    assert terminal.read_lines == 1
    assert stored(capsys, store) == 2


@pytest.mark.parametrize("typed", ["y\n", "YES\n", " yes \n"])
def test_forget_all_at_a_terminal_deletes_when_confirmed(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    store: str,
    typed: str,
) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(typed))
    code, out, err = run(capsys, "--path", store, "forget", *IDS, "--all")
    assert (code, out) == (0, "deleted 2 episode(s)\n")
    assert "[y/N]" in err
    assert stored(capsys, store) == 0


@pytest.mark.parametrize("flag", ["--yes", "-y"])
def test_forget_all_with_yes_does_not_ask(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, store: str, flag: str
) -> None:
    monkeypatch.setattr("sys.stdin", NoQuestions(""))
    code, out, err = run(capsys, "--path", store, "--json", "forget", *IDS, "--all", flag)
    assert (code, json.loads(out), err) == (0, {"deleted": 2}, "")
    assert stored(capsys, store) == 0


def test_forget_all_in_a_script_deletes_without_asking(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))  # piped: not a terminal
    code, out, err = run(capsys, "--path", store, "forget", *IDS, "--all")
    assert (code, out, err) == (0, "deleted 2 episode(s)\n", "")
    assert stored(capsys, store) == 0


def test_forget_of_one_conversation_or_point_does_not_ask(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    monkeypatch.setattr("sys.stdin", NoQuestions(""))
    code, out, _ = run(capsys, "--path", store, "forget", *IDS, "--conversation", "none")
    assert (code, out) == (0, "deleted 0 episode(s)\n")
    assert stored(capsys, store) == 2
