"""`episodex import` checks its file before opening the store without holding its episodes.

The check (`_check_import`) built the list of every valid episode of the file only to count
it, then dropped it and the import read the file again: a big export was held whole once more
than the import needs. It now counts each episode as it is checked and lets it go.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

import pytest
from episodex import ConversationEpisode, EpisodicMemory
from episodex.cli import main

EPISODES = 40


def test_the_import_check_holds_one_episode_at_a_time(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    records = [
        {
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": "c",
            "short_summary": f"episode {i}",
            "long_summary": f"the long summary of episode {i}",
            "start_index": i,
            "end_index": i + 1,
        }
        for i in range(EPISODES)
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    checked: list[weakref.ref[ConversationEpisode]] = []
    most_before_open = 0
    opened = False
    parse = ConversationEpisode.parse.__func__  # pyright: ignore[reportFunctionMemberAccess]

    def counting_parse(cls: type[ConversationEpisode], *args: Any, **kwargs: Any) -> Any:
        nonlocal most_before_open
        episode = parse(cls, *args, **kwargs)
        if not opened:
            checked.append(weakref.ref(episode))
            alive = sum(1 for ref in checked if ref() is not None)
            most_before_open = max(most_before_open, alive)
        return episode

    init = EpisodicMemory.__init__

    def opening(self: EpisodicMemory, *args: Any, **kwargs: Any) -> None:
        nonlocal opened
        opened = True
        init(self, *args, **kwargs)

    monkeypatch.setattr(ConversationEpisode, "parse", classmethod(counting_parse))
    monkeypatch.setattr(EpisodicMemory, "__init__", opening)

    assert main(["--path", str(tmp_path / "store"), "--json", "import", str(source)]) == 0
    assert json.loads(capsys.readouterr().out)["imported"] == EPISODES
    assert opened
    assert most_before_open <= 2
