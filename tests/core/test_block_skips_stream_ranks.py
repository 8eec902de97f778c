"""A prompt block recalls without stream ranks: the same episodes, in the same order, cheaper.

`recall_block` renders a `<recalled_episodes>` block, which never shows which streams found an
episode, so unless the caller passes `with_stream_ranks` it skips the id-only stream searches
(`Engine.query_explained`) and runs the fused searches alone (`Engine.query`). A plain `recall`
keeps its `streams` by default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, SyncEpisodicMemory, format_recall
from episodex.testing import HashEmbedder

U, A = "u", "a"
TOPICS = [
    "refund for the broken kettle",
    "the kettle was replaced by a new one",
    "delivery address moved to Elm Street",
    "a refund was issued for the torn parcel",
    "billing question about the March invoice",
    "the courier left the parcel at the door",
]


class EngineCalls:
    """Counts the engine's fused searches with and without stream ranks, passing each through."""

    def __init__(self, engine: Any) -> None:
        self.calls: Counter[str] = Counter()
        for name in ("query", "query_explained"):
            inner = getattr(engine, name)

            def counted(*args: Any, _inner: Any = inner, _name: str = name) -> Any:
                self.calls[_name] += 1
                return _inner(*args)

            setattr(engine, name, counted)


def seed() -> list[dict[str, Any]]:
    return [
        {
            "user_id": U,
            "agent_id": A,
            "conversation_id": f"c{i % 3}",
            "short_summary": text,
            "long_summary": f"user: {text}. assistant: noted ({i}).",
            "end_index": i,
        }
        for i, text in enumerate(TOPICS)
    ]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[tuple[EpisodicMemory, EngineCalls]]:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    yield memory, EngineCalls(memory.store.engine)
    memory.close()


@pytest.mark.parametrize("conversation", [None, "c1"])
async def test_block_skips_ranks_and_matches_recall(
    mem: tuple[EpisodicMemory, EngineCalls], conversation: str | None
) -> None:
    memory, spy = mem
    await memory.memorize_many(seed())
    where: dict[str, Any] = {"user_id": U, "agent_id": A, "conversation_id": conversation}
    for query in ("kettle refund", "parcel at the door", "Elm Street address"):
        spy.calls.clear()
        full = await memory.recall(query=query, **where)
        assert spy.calls == {"query_explained": 1}
        assert all("streams" in item for side in full.values() for item in side)
        for side in full.values():  # no tie the engine could order either way
            assert len({item["score"] for item in side}) == len(side)
        block = await memory.recall_block(query=query, **where)
        assert spy.calls == {"query_explained": 1, "query": 1}
        # The same episodes in the same order: the ranks only annotate them.
        assert block == format_recall(full)
        assert block.count("<episode") == sum(len(side) for side in full.values()) > 0


async def test_block_keeps_ranks_when_asked(mem: tuple[EpisodicMemory, EngineCalls]) -> None:
    memory, spy = mem
    await memory.memorize_many(seed())
    block = await memory.recall_block(
        user_id=U, agent_id=A, query="kettle refund", with_stream_ranks=True
    )
    assert spy.calls == {"query_explained": 1}
    assert "kettle" in block
    # Other options still reach the recall: a limit of 1 renders one episode.
    one = await memory.recall_block(
        user_id=U, agent_id=A, query="kettle refund", previous_conversation_limit=1
    )
    assert one.count("<episode") == 1
    with pytest.raises(TypeError):
        await memory.recall_block(user_id=U, agent_id=A, query="kettle", no_such_option=1)  # type: ignore[call-arg]


def test_sync_block_skips_ranks(tmp_path: Path) -> None:
    memory = SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    try:
        spy = EngineCalls(memory.store.engine)
        memory.memorize_many(seed())
        block = memory.recall_block(user_id=U, agent_id=A, query="kettle refund")
        assert spy.calls == {"query": 1}
        assert block == format_recall(memory.recall(user_id=U, agent_id=A, query="kettle refund"))
    finally:
        memory.close()
