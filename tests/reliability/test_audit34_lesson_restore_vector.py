"""A step lesson restored after a failed server write gets a usable state vector.

A `store_memories` a Qdrant server applied and then failed to answer for is taken back: the
steps it replaced are written back, their state vector taken from the `internal_state_embedding`
kept in the payload. A step stored without one (or with one that is not a vector of this
store's length: another program or an older release; every read still reads the step) was
written back with the vector `[]`, which the engine refuses: the clean take-back became
"taking back the failed write failed too ... it may be stored", the failed write left in place.
Such a step is now indexed by its state text embedded, as a new write of it would be; its
payload is written back as it was.

The failing engine is qdrant-client's `:memory:`, wrapped to apply the next upsert and then
raise, reporting the kind `server`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

import pytest
from episodex import Engine, EngineError, EngineUnavailableError, StepLessonMemory, open_engine
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


@pytest.mark.parametrize(
    "embedding",
    [None, [], [0.5, 0.5], "vector", "other-model"],
    ids=["missing", "empty", "short", "text", "other-model"],
)
def test_a_restored_step_without_a_usable_state_vector_is_taken_back_and_found(
    embedding: object,
) -> None:
    engine = AppliedThenFailed(open_engine(location=":memory:"))
    embedder = HashEmbedder()
    lessons = StepLessonMemory(cast(Engine, engine), embedder)
    kept = str(uuid.uuid4())
    scope = {"user_id": "u", "agent_id": "web"}
    collection = "step_lessons"
    try:
        asyncio.run(lessons.store_memories([_step(kept, "click [1]")]))
        flt = Filter(must=(HasId((kept,)),))
        (hit,), _ = engine.scroll(collection, flt, limit=1)
        payload = dict(hit.payload)
        if embedding is None:
            del payload["internal_state_embedding"]
            payload.pop("embedding_model", None)
        elif embedding == "other-model":
            # A vector of the right length another model made: not this store's vector.
            payload["internal_state_embedding"] = [1.0] + [0.0] * (embedder.dimension - 1)
            payload["embedding_model"] = "another/model"
        else:
            payload["internal_state_embedding"] = embedding
            payload.pop("embedding_model", None)
        vector = embedder.embed_documents(["save ticket 7"])[0].tolist()
        engine.inner.upsert(
            collection, [Point(id=kept, dense={"state": vector}, sparse={}, payload=payload)]
        )
        engine.failing = True
        # The write's own failure, not "taking back the failed write failed too".
        with pytest.raises(EngineUnavailableError):
            asyncio.run(lessons.store_memories([_step(kept, "type 'x'")]))
        (back,), _ = engine.scroll(collection, flt, limit=1)
        assert back.payload == payload  # written back as it was
        if embedding in ([], "vector"):
            # An embedding that is no vector makes the step unreadable, as it was before.
            with pytest.raises(EngineError, match="cannot be read back"):
                asyncio.run(lessons.load_all_memories_for_session("ticket-7", **scope))
        else:
            stored = asyncio.run(lessons.load_all_memories_for_session("ticket-7", **scope))
            assert [(m.id, m.action) for m in stored] == [(kept, "click [1]")]
        # Still found by its state, with a vector of the store's length.
        search = Search(Stream("state", vector, 1), Filter(), 1)
        ((found,),) = engine.query(collection, [search])
        assert found.id == kept
        assert found.score == pytest.approx(1.0, abs=1e-4)
    finally:
        engine.inner.close()
