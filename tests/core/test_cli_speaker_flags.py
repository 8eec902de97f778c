"""`episodex recall` takes --speaker-weight, --speaker-bm25-weight and --conversation-diversity.

Episodes added with `speakers` (from --from-json) are found by the speaker streams; each flag
sets the recall option of the same name, and a value recall refuses is a usage error (exit 2)
that names the option.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from episodex.cli import main

#: (conversation, speakers): three episodes of one conversation and one of another.
EPISODES = [("c1", ["Caroline"]), ("c1", ["Caroline"]), ("c1", ["Caroline"]), ("c2", [])]


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "cli")
    for n, (conversation, speakers) in enumerate(EPISODES):
        episode = tmp_path / f"{n}.json"
        episode.write_text(
            json.dumps(
                {
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": conversation,
                    "short_summary": f"Hiking trip number {n}",
                    "long_summary": f"We talked about hiking trip number {n}",
                    "speakers": speakers,
                }
            )
        )
        assert main(["--path", path, "add", "--from-json", str(episode)]) == 0
    return path


def recall(store: str, capsys: pytest.CaptureFixture[str], *flags: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    args = ["--path", store, "recall", "--user", "u", "--agent", "a", "--json", *flags]
    assert main([*args, "What did Caroline say about hiking?"]) == 0
    return json.loads(capsys.readouterr().out)["previous_conversations"]


def test_the_speaker_flags_turn_each_stream_on_and_off(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    items = recall(store, capsys)
    assert len(items) == len(EPISODES)
    named = [i for i in items if i["conversation_id"] == "c1"]
    assert all({"speaker", "speaker_bm25"} <= set(i["streams"]) for i in named)
    assert "speaker_keys" not in items[0] and items[0]["speakers"] in (["Caroline"], [])
    items = recall(store, capsys, "--speaker-weight", "0")
    named = [i for i in items if i["conversation_id"] == "c1"]
    assert len(named) == 3 and all("speaker_bm25" in i["streams"] for i in named)
    assert not any("speaker" in i["streams"] for i in items)
    items = recall(store, capsys, "--speaker-bm25-weight", "0", "--speaker-weight", "0")
    assert not any({"speaker", "speaker_bm25"} & set(i["streams"]) for i in items)


def test_the_diversity_flag_reorders_and_rescores(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fused = recall(store, capsys, "--conversation-diversity", "0")
    diverse = recall(store, capsys, "--conversation-diversity", "0.9")
    assert sorted(i["point_id"] for i in diverse) == sorted(i["point_id"] for i in fused)
    scores = [i["score"] for i in diverse]
    assert scores == sorted(scores, reverse=True)
    # c1's three episodes: the second and third are discounted once and twice.
    placed = 0
    by_id = {i["point_id"]: i["score"] for i in fused}
    for item in diverse:
        if item["conversation_id"] == "c1":
            assert item["score"] == pytest.approx(by_id[item["point_id"]] * 0.1**placed)
            placed += 1
    assert placed == 3


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--speaker-weight", "-1"),
        ("--speaker-bm25-weight", "nan"),
        ("--conversation-diversity", "1"),
        ("--conversation-diversity", "-0.1"),
    ],
)
def test_a_bad_value_is_a_usage_error(
    store: str, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    capsys.readouterr()
    args = ["--path", store, "recall", "--user", "u", "--agent", "a", flag, value, "Caroline"]
    assert main(args) == 2
    option = flag.removeprefix("--").replace("-", "_")
    assert option in capsys.readouterr().err
