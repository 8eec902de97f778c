"""Span episodes carry their speakers, and every core path that stores them keeps them.

`span_episodes` lists who spoke in each episode (each message's role, then the speaker's name
a `(role, text, name)` triple gives), `message_line(..., name=)` makes such triples from a
framework's odd names (whitespace collapsed, blank or over-long names left out), and
`memorize`, the recorder (its spill file too) and `episodex add --speaker` store them, so a
recall that names the speaker searches their episodes in the `speaker` streams.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    EpisodeRecorder,
    EpisodicMemory,
    SpanEpisode,
    ValidationError,
    message_line,
    open_engine,
    span_episodes,
)
from episodex.cli import main
from episodex.testing import FailingEngine, HashEmbedder

U, A = "u1", "companion"


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield mem
    mem.close()


def _fields(episode: SpanEpisode, conversation: str) -> dict[str, Any]:
    return {
        "short_summary": episode.short_summary,
        "long_summary": episode.long_summary,
        "user_id": U,
        "agent_id": A,
        "conversation_id": conversation,
        "start_index": episode.start_index,
        "end_index": episode.end_index,
        "speakers": list(episode.speakers),
    }


# -- span_episodes and message_line --------------------------------------------------------


def test_an_episode_lists_roles_and_names_in_order_of_first_appearance() -> None:
    (episode,) = span_episodes(
        [
            message_line("system", "Be kind.", system=True),
            message_line("user", "I went to a pottery class.", name="Caroline"),
            message_line("assistant", "How was it?", name="Melanie"),
            message_line("user", "   ", name="Ghost"),  # blank text: skipped, no speaker
            message_line("user", "Lovely, I made a bowl.", name="Caroline"),
            message_line("tool", "42"),
        ]
    )
    assert episode.speakers == ("user", "Caroline", "assistant", "Melanie", "tool")
    # The long summary is unchanged by names: `role: text` lines.
    assert episode.long_summary == (
        "user: I went to a pottery class.\nassistant: How was it?\n"
        "user: Lovely, I made a bowl.\ntool: 42"
    )


def test_pairs_still_work_and_list_their_roles() -> None:
    (episode,) = span_episodes([("user", "hi"), ("assistant", "hello"), ("user", "bye")])
    assert episode.speakers == ("user", "assistant")
    assert episode.long_summary == "user: hi\nassistant: hello\nuser: bye"
    # A triple whose name is None is a pair.
    assert span_episodes([("user", "hi", None)])[0].speakers == ("user",)
    assert message_line("user", "hi") == ("user", "hi")


def test_a_split_message_and_each_span_episode_keep_their_own_speakers() -> None:
    long_text = "word " * 400
    episodes = span_episodes(
        [("user", "short question", "Caroline"), ("assistant", long_text, "Melanie")],
        max_chars=200,
    )
    assert episodes[0].speakers == ("user", "Caroline")
    parts = [e for e in episodes if e.part is not None]
    assert len(parts) > 1
    assert all(e.speakers == ("assistant", "Melanie") for e in parts)


def test_message_line_collapses_a_name_and_leaves_out_blank_or_over_long_ones() -> None:
    assert message_line("user", "hi", name="  Caroline\n Smith\t") == (
        "user",
        "hi",
        "Caroline Smith",
    )
    assert message_line("user", "hi", name=" \n\t ") == ("user", "hi")
    assert message_line("user", "hi", name="") == ("user", "hi")
    assert message_line("user", "hi", name="x" * 513) == ("user", "hi")
    assert message_line("user", "hi", name="x" * 512) == ("user", "hi", "x" * 512)
    # A system prompt is skipped, its name with it.
    assert message_line("system", "rules", system=True, name="Admin") == ("system", "")
    with pytest.raises(ValidationError, match="name"):
        message_line("user", "hi", name=7)  # pyright: ignore[reportCallIssue, reportArgumentType]


@pytest.mark.parametrize("name", ["", "  ", " Caroline", "Caro\nline", "x" * 513, 7, "\ud800"])
def test_span_episodes_refuses_a_name_it_cannot_store(name: Any) -> None:
    with pytest.raises(ValidationError, match="message 1: name"):
        span_episodes([("user", "fine", "Caroline"), ("assistant", "hello", name)])


@pytest.mark.parametrize(
    "message", [("user",), ("user", "hi", "Caroline", "extra"), ["user", "hi"]]
)
def test_span_episodes_refuses_other_shapes(message: Any) -> None:
    with pytest.raises(ValidationError, match="message 0: expected a \\(role, text\\) pair"):
        span_episodes([message])


def test_a_role_longer_than_a_speaker_may_be_is_refused() -> None:
    with pytest.raises(ValidationError, match="role must be at most 512"):
        span_episodes([("r" * 600, "text")], max_chars=4000)


def test_more_speakers_than_one_episode_holds_start_a_new_episode(
    memory: EpisodicMemory,
) -> None:
    messages = [message_line("user", f"hello {n}", name=f"guest{n}") for n in range(70)]
    episodes = span_episodes(messages)
    assert len(episodes) == 2  # 70 short lines fit one episode's characters, not its speakers
    assert all(len(e.speakers) <= 64 for e in episodes)
    heard = [s for e in episodes for s in e.speakers if s != "user"]
    assert heard == [f"guest{n}" for n in range(70)]
    ids = memory.store.memorize_many([_fields(e, "c-many") for e in episodes])
    assert len(ids) == 2


# -- what stores them -----------------------------------------------------------------------


async def test_memorize_stores_span_speakers_and_a_recall_naming_one_uses_the_speaker_streams(
    memory: EpisodicMemory,
) -> None:
    talks = {
        "c1": [
            ("user", "I went to a pottery class on Saturday.", "Caroline"),
            ("assistant", "That sounds relaxing!", None),
        ],
        "c2": [
            ("user", "My dog learned a new trick at the park.", "Melanie"),
            ("assistant", "Good dog!", None),
        ],
    }
    for conversation, messages in talks.items():
        for episode in span_episodes(messages):
            await memory.memorize(**_fields(episode, conversation))
    stored = memory.store.read_recent(10, user_id=U, agent_id=A)
    assert sorted(tuple(item["speakers"]) for item in stored) == [
        ("user", "Caroline", "assistant"),
        ("user", "Melanie", "assistant"),
    ]
    res = await memory.recall(
        user_id=U, agent_id=A, query="what did Caroline say about the pottery class"
    )
    items = res["previous_conversations"]
    named = [i for i in items if "speaker" in i["streams"]]
    assert [i["conversation_id"] for i in named] == ["c1"]
    assert "speaker_bm25" in named[0]["streams"]
    assert all("speaker" not in i["streams"] for i in items if i["conversation_id"] == "c2")


async def test_memorize_refuses_a_string_of_speakers(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="speakers"):
        await memory.memorize(
            short_summary="s",
            long_summary="l",
            user_id=U,
            agent_id=A,
            conversation_id="c",
            speakers="Caroline",
        )
    assert memory.store.read_recent(10, user_id=U, agent_id=A) == []


async def test_a_recorded_episode_keeps_its_speakers_through_the_spill_file(
    tmp_path: Path,
) -> None:
    engine = FailingEngine(open_engine(location=":memory:"), writes=True)
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    spill = tmp_path / "spill.jsonl"
    try:
        recorder = EpisodeRecorder(memory, max_pending=1, spill_path=spill)
        spans = [
            span_episodes([("user", "I adopted a cat.", "Caroline"), ("assistant", "Nice!")]),
            span_episodes([("user", "I ran a marathon.", "Melanie")]),
        ]
        for number, (episode,) in enumerate(spans):
            assert await recorder.record(**_fields(episode, f"c{number}")) is None
        # A failed write spills what waits, so a restart loses none of it.
        assert recorder.stats().spilled == 2
        first, second = spill.read_text().splitlines()
        assert json.loads(first)["speakers"] == ["user", "Caroline", "assistant"]
        assert json.loads(second)["speakers"] == ["user", "Melanie"]

        engine.writes = False
        assert await recorder.flush() == 0
        assert not spill.exists()
        stored = memory.store.read_recent(10, user_id=U, agent_id=A)
        assert sorted(tuple(item["speakers"]) for item in stored) == [
            ("user", "Caroline", "assistant"),
            ("user", "Melanie"),
        ]
    finally:
        memory.close()
        engine.close()


def test_cli_add_takes_repeated_speakers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, embedder: Any
) -> None:
    store = str(tmp_path / "store")
    ids = ["--user", U, "--agent", A, "--conversation", "c1"]
    texts = ["--short", "pottery", "--long", "Caroline: pottery class"]
    speakers = ["--speaker", "Caroline", "--speaker", "user"]
    code = main(["--path", store, "add", *ids, *texts, *speakers])
    out, err = capsys.readouterr()
    assert code == 0, err
    code = main(["--path", store, "add", "--from-json", "-", "--speaker", "Caroline"])
    _, err = capsys.readouterr()
    assert code != 0
    assert "--speaker cannot be combined with --from-json" in err
    memory = EpisodicMemory(path=store, embedder=embedder)
    try:
        (item,) = memory.store.read_recent(10, user_id=U, agent_id=A)
        assert item["speakers"] == ["Caroline", "user"]
        assert item["point_id"] in out
    finally:
        memory.close()
