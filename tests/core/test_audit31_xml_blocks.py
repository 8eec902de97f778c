"""Every `<recalled_episodes>` block is well-formed XML and shows what was stored.

Stored text was escaped for `<`, `>` and `&` only. A character XML 1.0 forbids everywhere,
even as a character reference (the C0 controls other than tab, newline and carriage return,
U+FFFE, U+FFFF), went into the block as it was, so a rollout holding terminal output
(`\\x1b[31m`), a form feed or a NUL made the whole block ill-formed: an XML parser refused it,
and a model reading it had no well-defined block. A carriage return was written raw, so a
parser read `a\\rb` back as `a\\nb`. Now each forbidden character is shown as U+FFFD (as a
lone surrogate is elsewhere) and a carriage return as `&#13;`, in the task-episode block,
`Episode.format` and the conversation block alike; every other character comes back exact.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from episodex import (
    Episode,
    JSONLTaskStore,
    QdrantTaskStore,
    RecencyMemory,
    Task,
    TaskResult,
    format_recall,
    render_episodes,
)
from episodex.testing import HashEmbedder

# Every character XML 1.0 cannot hold, then what a block must carry exactly.
FORBIDDEN = "".join(
    chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF)
)
TRICKY = "a\rb\r\nc\td ]]> </task></episode></recalled_episodes> &amp; <x y='1'> \"q\" \x7f\x85"


def _text(forbidden: str = FORBIDDEN) -> str:
    return f"start {forbidden} {TRICKY} end"


def _shown(text: str) -> str:
    return "".join("\ufffd" if c in FORBIDDEN else c for c in text)


def _episode() -> Episode:
    task = Task(id_="t1", instruction=_text())
    return Episode(
        id_="e1",
        task=task,
        rollout=_text("\x1b[31mred\x1b[0m"),
        result=TaskResult(task_id=task.id_, content=_text()),
        error=_text(),
        additional_data={"note": _text()},
        metadata={"k": "plain"},
    )


ALL = ["id_", "task_id", "instruction", "rollout", "result", "additional_data", "error"]


def _check_task_block(block: str, episode: Episode) -> None:
    root = ET.fromstring(block)  # raises ParseError on an ill-formed block
    assert root.tag == "recalled_episodes"
    (element,) = root
    shown = {child.tag: child.text for child in element}
    assert shown["task"] == _shown(episode.task.instruction)
    assert shown["rollout"] == _shown(episode.rollout)
    assert "\ufffd[31mred\ufffd[0m" in str(shown["rollout"])
    assert episode.result is not None and shown["result"] == _shown(episode.result.content)
    assert shown["error"] == _shown(str(episode.error))
    assert shown["note"] == _shown(_text())
    assert "a\rb\r\nc\td ]]> </task>" in str(shown["task"])  # carriage returns kept exactly


def test_task_episode_blocks_are_well_formed_and_exact() -> None:
    episode = _episode()
    _check_task_block(render_episodes([episode], include=ALL), episode)
    alone = ET.fromstring(episode.format(include=ALL))
    assert alone.tag == "episode" and alone.findtext("task") == _shown(episode.task.instruction)
    # Shortened to a budget, the block is still well-formed.
    short = render_episodes([episode], include=ALL, max_tokens=150)
    assert short and ET.fromstring(short).tag == "recalled_episodes"


@pytest.mark.parametrize("kind", ["jsonl", "edge", "memory"])
async def test_a_recalled_block_of_any_store_is_well_formed(kind: str, tmp_path: Path) -> None:
    if kind == "jsonl":
        store: JSONLTaskStore | QdrantTaskStore = JSONLTaskStore(tmp_path / "tasks")
    elif kind == "edge":
        store = QdrantTaskStore(path=tmp_path / "edge", embedder=HashEmbedder())
    else:
        store = QdrantTaskStore(location=":memory:", embedder=HashEmbedder())
    try:
        episode = _episode()
        memory = RecencyMemory(store, n=3, include=ALL)
        await memory.record(episode)
        _check_task_block(await memory.recall("anything"), episode)
    finally:
        store.close()


def test_the_conversation_block_is_well_formed_and_exact() -> None:
    item = {
        "point_id": _text(),
        "conversation_id": _text(),
        "short_summary_text": _text(),
        "long_summary_text": _text(),
        "tools_invoked": [_text()],
        "score": 0.5,
    }
    block = format_recall({"same_conversation": [item], "previous_conversations": []})
    root = ET.fromstring(block)
    episode = root.find("same_conversation/episode")
    assert episode is not None
    assert episode.get("id") == _shown(_text()) and episode.get("conversation") == _shown(_text())
    assert episode.findtext("summary") == _shown(_text())
    assert episode.findtext("details") == _shown(_text())
    assert episode.findtext("tools") == _shown(_text())
