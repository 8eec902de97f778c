"""Ctrl-C during `episodex add` or `forget` says how the write under way ended.

A store write cannot stop halfway: interrupted, it runs on in its thread to its end. `import`
waited for it and said so; `add` and `forget` closed the store under the write (which then
failed, or ran whole if it was past the close) and exited 130 without a word, so the user
could not know whether the episode was stored (adding it again could store it twice) or the
episodes deleted. Both now wait for the write, print what it did, and exit 130.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory
from episodex.cli import main

OWNER = ["--user", "u", "--agent", "a"]


def _interrupt_during(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Ctrl-C (a real SIGINT) while the store's `name` runs in its worker thread."""
    method = EpisodicMemory.__dict__[name]  # a descriptor: bound below

    async def interrupted(self: EpisodicMemory, *args: Any, **kwargs: Any) -> Any:
        tasks = asyncio.all_tasks()  # the command's, one of which the Ctrl-C cancels
        store = self.store
        write = getattr(type(store), name)

        def ctrl_c_then_write(*a: Any, **kw: Any) -> Any:
            os.kill(os.getpid(), signal.SIGINT)
            waited = threading.Event()
            while not any(t.cancelling() for t in tasks):  # the Ctrl-C seen before the write ends
                waited.wait(0.01)
            return write(store, *a, **kw)

        with pytest.MonkeyPatch.context() as inner:
            inner.setattr(store, name, ctrl_c_then_write)
            return await method.__get__(self, EpisodicMemory)(*args, **kwargs)

    monkeypatch.setattr(EpisodicMemory, name, interrupted)


def _episodes(capsys: pytest.CaptureFixture[str], store: Path) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["--path", str(store), "export", *OWNER]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _add(store: Path, short: str) -> list[str]:
    return [
        "--path", str(store), "add", *OWNER, "--conversation", "c",
        "--short", short, "--long", f"the long summary of {short}", "--end", "1",
    ]  # fmt: skip


def test_an_interrupted_add_says_the_episode_it_stored(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    _interrupt_during(monkeypatch, "memorize_many")
    assert main(_add(store, "first")) == 130
    err = capsys.readouterr().err
    monkeypatch.undo()
    (stored,) = _episodes(capsys, store)
    assert "interrupted" in err and stored["point_id"] in err and "Traceback" not in err


def test_an_interrupted_forget_says_what_it_deleted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    assert main(_add(store, "first")) == 0
    assert main(_add(store, "second")) == 0
    _interrupt_during(monkeypatch, "forget")
    assert main(["--path", str(store), "forget", *OWNER, "--all"]) == 130
    err = capsys.readouterr().err
    monkeypatch.undo()
    assert _episodes(capsys, store) == []
    assert "interrupted" in err and "2 episode(s) deleted" in err and "Traceback" not in err
