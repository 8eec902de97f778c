"""numpy numbers (and any `numbers.Real`) are taken where Python floats are.

Weights, shares, thresholds and filter numbers were checked with `isinstance(x, int | float)`:
a numpy float32 (what a model's or numpy's arithmetic hands back) is neither, so a weight of
`np.float32(0.5)` was refused with "must be a finite number" while `0.5` was taken.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from episodex import (
    EpisodicMemory,
    ItemPut,
    ItemRef,
    ItemStore,
    JSONLTaskStore,
    MemKey,
    ReflectiveMemory,
    WorkingMemory,
)
from episodex.testing import HashEmbedder


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    yield mem
    mem.close()


def test_working_memory_takes_numpy_weights() -> None:
    wm = WorkingMemory()
    wm.store("the door is locked", MemKey.OBSERVATION)
    wm.store("find the key first", MemKey.THOUGHT)
    given = {MemKey.OBSERVATION: np.float32(2.0), MemKey.THOUGHT: np.float32(1.0)}
    assert wm.retrieve(given) == "the door is locked"


async def test_recall_takes_numpy_weights_and_shares(memory: EpisodicMemory) -> None:
    plain = await memory.recall(
        user_id="u", agent_id="a", query="keys", bm25_weight=0.5, conversation_diversity=0.25
    )
    numpy = await memory.recall(
        user_id="u",
        agent_id="a",
        query="keys",
        bm25_weight=np.float32(0.5),  # pyright: ignore[reportArgumentType]
        conversation_diversity=np.float32(0.25),  # pyright: ignore[reportArgumentType]
    )
    assert numpy == plain


def test_item_search_takes_numpy_filter_numbers(memory: EpisodicMemory) -> None:
    items = ItemStore(memory.engine, memory.embedder)
    ref = ItemRef("u", "a", ("notes",), "k")
    items.write([ItemPut(ref, {"n": 5}, text="five")])
    found = items.search(
        user_id="u",
        agent_id="a",
        filter={"n": {"$gt": np.float32(4.5)}},
        dense_weight=np.float32(0.3),  # pyright: ignore[reportArgumentType]
    )
    assert [item.key for item in found] == ["k"]
    equal = items.search(user_id="u", agent_id="a", filter={"n": np.float32(5.0)})
    assert [item.key for item in equal] == ["k"]


def test_reflective_memory_takes_a_numpy_timeout(tmp_path: Path) -> None:
    async def llm(prompt: str) -> str:
        return "lesson"

    memory = ReflectiveMemory(JSONLTaskStore(tmp_path), llm, timeout=np.float32(2.5))  # pyright: ignore[reportArgumentType]
    assert memory.timeout == 2.5
