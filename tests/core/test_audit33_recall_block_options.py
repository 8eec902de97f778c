"""`recall_block` refuses a bad budget or encoding before it reads anything, whatever is stored.

Its `max_tokens` and `encoding` were checked only when the recalled episodes were rendered:
after the recall had embedded the query and searched the store (an outage then hid the
mistake behind an engine error), and a bad encoding was accepted outright whenever nothing
matched, so a call that worked on a new user's empty memory failed once the memory filled.
The task memories' `render_memories` checked its encoding only after recalling from every
memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conformance.backends import BACKENDS, engine_options
from episodex import (
    ConfigurationError,
    Episode,
    EpisodicMemory,
    JSONLTaskStore,
    RecencyMemory,
    SyncEpisodicMemory,
    Task,
    ValidationError,
    format_recall,
    open_engine,
    render_memories,
)
from episodex.testing import FailingEngine, HashEmbedder

BAD_OPTIONS: list[tuple[dict[str, Any], type[Exception]]] = [
    ({"max_tokens": -1}, ValidationError),
    ({"max_tokens": "500"}, ValidationError),
    ({"max_tokens": True}, ValidationError),
    ({"max_tokens": 500, "encoding": "no_such_encoding"}, ConfigurationError),
    ({"max_tokens": 500, "encoding": 42}, ConfigurationError),
]


def _failing_memory(backend: str, tmp_path: Path) -> tuple[EpisodicMemory, FailingEngine]:
    path, options = engine_options(backend, tmp_path)
    failing = FailingEngine(open_engine(path=str(path) if path else None, **options))
    mem = EpisodicMemory(engine=failing, embedder=HashEmbedder(), splade=False)
    return mem, failing


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("bad", "error"), BAD_OPTIONS)
async def test_recall_block_refuses_a_bad_budget_or_encoding_before_reading(
    backend: str, tmp_path: Path, bad: dict[str, Any], error: type[Exception]
) -> None:
    mem, failing = _failing_memory(backend, tmp_path)
    try:
        await mem.memorize(
            short_summary="Refund for order 1234",
            long_summary="The user asked for a refund; the agent issued it.",
            user_id="u1",
            agent_id="support",
            conversation_id="c1",
        )
        # Any read now fails: a check made before the recall is the one raised.
        failing.reads = True
        with pytest.raises(error):
            await mem.recall_block(user_id="u1", agent_id="support", query="refund", **bad)
        assert failing.failures == 0
        failing.reads = False
        twin = SyncEpisodicMemory(memory=mem)
        try:
            failing.reads = True
            with pytest.raises(error):
                twin.recall_block(user_id="u1", agent_id="support", query="refund", **bad)
            assert failing.failures == 0
            failing.reads = False
        finally:
            twin.close()
    finally:
        mem.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stored", [False, True])
async def test_a_bad_encoding_is_refused_whether_or_not_anything_matched(
    backend: str, tmp_path: Path, *, stored: bool
) -> None:
    path, options = engine_options(backend, tmp_path)
    async with EpisodicMemory(path, embedder=HashEmbedder(), splade=False, **options) as mem:
        if stored:
            await mem.memorize(
                short_summary="Refund for order 1234",
                long_summary="The user asked for a refund; the agent issued it.",
                user_id="u1",
                agent_id="support",
                conversation_id="c1",
            )
        with pytest.raises(ConfigurationError, match="no_such_encoding"):
            await mem.recall_block(
                user_id="u1",
                agent_id="support",
                query="refund",
                max_tokens=500,
                encoding="no_such_encoding",
            )
        # A good call answers as before: the block when something matched, "" otherwise.
        block = await mem.recall_block(
            user_id="u1", agent_id="support", query="refund", max_tokens=500
        )
        assert block.startswith("<recalled_episodes>") if stored else block == ""


def test_format_recall_refuses_a_bad_encoding_of_an_empty_result() -> None:
    empty: dict[str, list[dict[str, Any]]] = {"same_conversation": [], "previous_conversations": []}
    with pytest.raises(ConfigurationError, match="no_such_encoding"):
        format_recall(empty, max_tokens=100, encoding="no_such_encoding")
    assert format_recall(empty, max_tokens=100) == ""
    assert format_recall(empty) == ""


class _CountingRecency(RecencyMemory):
    """A real recency memory that counts how often it was read."""

    reads = 0

    async def retrieve(self, task: Task | str) -> list[Episode]:
        self.reads += 1
        return await super().retrieve(task)


@pytest.mark.parametrize(("bad", "error"), BAD_OPTIONS)
async def test_render_memories_refuses_a_bad_budget_or_encoding_before_reading(
    tmp_path: Path, bad: dict[str, Any], error: type[Exception]
) -> None:
    with JSONLTaskStore(tmp_path) as store:
        await store.write(Episode(task=Task(instruction="Convert 3 miles to km")))
        memory = _CountingRecency(store)
        with pytest.raises(error):
            await render_memories([memory], "Convert 5 miles", **bad)
        assert memory.reads == 0
        assert "Convert 3 miles to km" in await render_memories([memory], "Convert 5 miles")
