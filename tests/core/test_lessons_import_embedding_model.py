"""A step exported from a store with one embedder and imported into another is embedded again.

Both the test embedder and the bundled model make 384 numbers, so the length check let the
first store's vector into the second: its lessons were then compared with the second model's
queries as if both models shared one space. Each stored step now names the model that made its
embedding (`embedding_model`), and a store re-embeds an imported step another model made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from episodex import EpisodicMemory, StepLessonMemory, StepMemory, export_memories, import_memories
from episodex.testing import HashEmbedder


def _step(session: str, state: str) -> dict[str, Any]:
    return {
        "step_id": "s1",
        "user_id": "alice",
        "agent_id": "web",
        "session_id": session,
        "run_id": "r1",
        "rep": 1,
        "step_num": 1,
        "env_pre": {"url": "https://app.test/tickets/7"},
        "internal_state": state,
        "action": "click('12')",
        "outcome": "success",
    }


async def _stored(memory: EpisodicMemory, session: str, steps: list[Any]) -> list[StepMemory]:
    lessons = StepLessonMemory.from_memory(memory)
    await lessons.store_memories(steps)
    return await lessons.load_all_memories_for_session(session, user_id="alice", agent_id="web")


@pytest.mark.parametrize("fmt", ["json", "csv"])
async def test_an_import_from_another_model_is_embedded_again(
    tmp_path: Path, embedder: Any, fmt: Literal["json", "csv"]
) -> None:
    state = "raise the priority of the printer ticket"
    other = HashEmbedder(dimension=embedder.dimension, model_id="test/hash-384")
    source = EpisodicMemory(path=tmp_path / "source", embedder=other, splade=False)
    target = EpisodicMemory(path=tmp_path / "target", embedder=embedder, splade=False)
    try:
        (exported,) = await _stored(source, "t7", [_step("t7", state)])
        text = export_memories([exported], fmt)

        (back,) = await _stored(target, "t7", import_memories(text, fmt))
        assert back.internal_state_embedding is not None
        got = np.asarray(back.internal_state_embedding)
        want = embedder.embed_documents([state])[0]
        assert float(got @ want / np.linalg.norm(got) / np.linalg.norm(want)) > 0.999
        assert (exported.embedding_model, back.embedding_model) == (
            "test/hash-384",
            embedder.model_id,
        )
        # Everything else came across as it was.
        same = {"internal_state_embedding", "embedding_model"}
        assert back.model_dump(exclude=same) == exported.model_dump(exclude=same)
    finally:
        source.close()
        target.close()


async def test_an_import_from_the_same_model_keeps_its_embedding(
    tmp_path: Path, embedder: Any
) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=embedder, splade=False)
    try:
        (first,) = await _stored(memory, "t8", [_step("t8", "close the ticket")])
        # A made-up vector, as if the file's model had embedded it: kept, not recomputed.
        vector = [1.0] + [0.0] * (embedder.dimension - 1)
        edited = first.replace(internal_state_embedding=vector)
        (back,) = await _stored(memory, "t8", import_memories(export_memories([edited], "json")))
        assert back.internal_state_embedding == vector
        assert back.embedding_model == embedder.model_id
    finally:
        memory.close()
