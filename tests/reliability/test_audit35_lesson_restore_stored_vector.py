"""A step lesson restored after a failed server write gets back the vector it was stored with.

A `store_memories` a Qdrant server applied and then failed to answer for is taken back: the
steps it replaced are written back. A step whose payload keeps no usable state embedding
(written by another program or an older release) was written back indexed by its state text
embedded anew, not by the vector it was stored with: after a write that failed, the step was
found by other searches, with other scores, than before it. On a server the stored vectors of
such steps are now read before the write and written back as they were.

The failing engine is qdrant-client's `:memory:`, wrapped to apply the next upsert and then
raise, reporting the kind `server`.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any, cast

import pytest
from episodex import Engine, EngineUnavailableError, StepLessonMemory, open_engine
from episodex.plan import Filter, HasId, Point, Search, Stream
from episodex.testing import HashEmbedder

from ._support import AppliedThenFailed


def _step(point_id: str, action: str) -> dict[str, Any]:
    return {
        "id": point_id,
        "step_id": "s1",
        "user_id": "u",
        "agent_id": "web",
        "session_id": "ticket-7",
        "run_id": "r1",
        "rep": 1,
        "step_num": 1,
        "env_pre": {"url": "https://app.example/tickets/7", "elements": ["[1] button 'Save'"]},
        "internal_state": "save ticket 7",
        "action": action,
        "outcome": "failure",
    }


@pytest.mark.parametrize("embedding", [None, [0.5, 0.5]], ids=["missing", "short"])
def test_a_restored_step_keeps_the_vector_it_was_stored_with(embedding: object) -> None:
    engine = AppliedThenFailed(open_engine(location=":memory:"))
    embedder = HashEmbedder()
    lessons = StepLessonMemory(cast(Engine, engine), embedder)
    kept = str(uuid.uuid4())
    collection = "step_lessons"
    try:
        asyncio.run(lessons.store_memories([_step(kept, "click [1]")]))
        flt = Filter(must=(HasId((kept,)),))
        (hit,), _ = engine.scroll(collection, flt, limit=1)
        payload = dict(hit.payload)
        payload.pop("embedding_model", None)
        if embedding is None:
            del payload["internal_state_embedding"]
        else:
            payload["internal_state_embedding"] = embedding
        # Another program's vector: not the state text's embedding.
        own = [1.0] + [0.0] * (embedder.dimension - 1)
        state = embedder.embed_documents(["save ticket 7"])[0].tolist()
        assert not math.isclose(sum(a * b for a, b in zip(own, state, strict=True)), 1.0)
        engine.inner.upsert(
            collection, [Point(id=kept, dense={"state": own}, sparse={}, payload=payload)]
        )
        engine.failing = True
        with pytest.raises(EngineUnavailableError):
            asyncio.run(lessons.store_memories([_step(kept, "type 'x'")]))
        (back,), _ = engine.scroll(collection, flt, limit=1)
        assert back.payload == payload
        ((found,),) = engine.query(collection, [Search(Stream("state", own, 1), Filter(), 1)])
        assert found.id == kept
        assert found.score == pytest.approx(1.0, abs=1e-6)
    finally:
        engine.inner.close()
