"""A task episode restored after a failed server write gets back the vectors it was stored with.

A write a Qdrant server applied and then failed to answer for is taken back: the point it
replaced is written back. A stored point without a readable `text` (written by another program
or an older release, indexed by a text of its own) was written back with dense and BM25 vectors
made anew from the text its episode gives: after a write that failed, the episode was found by
other searches, with other scores, than before it. On a server the stored vectors of such points
are now read before the write and written back as they were.

The failing engine is qdrant-client's `:memory:`, wrapped to apply the next upsert and then
raise, reporting the kind `server`.
"""

from __future__ import annotations

from typing import cast

import pytest
from episodex import Engine, EngineUnavailableError, Episode, QdrantTaskStore, Task, open_engine
from episodex.plan import Filter, Match, Point, Search, SparseVec, Stream
from episodex.testing import HashEmbedder

from ._support import AppliedThenFailed


@pytest.mark.parametrize("text", [None, "  ", 7], ids=["missing", "blank", "number"])
async def test_a_restored_task_episode_keeps_the_vectors_it_was_stored_with(
    text: object,
) -> None:
    engine = AppliedThenFailed(open_engine(location=":memory:"))
    store = QdrantTaskStore(engine=cast(Engine, engine), embedder=HashEmbedder())
    try:
        await store.write(Episode(id_="kept", task=Task(instruction="file the expense report")))
        await store.write(Episode(id_="other", task=Task(instruction="water the plants")))
        flt = Filter(must=(Match("episode_id", "kept"),))
        (hit,), _ = engine.scroll(store.collection, flt, limit=1)
        payload = dict(hit.payload)
        if text is None:
            del payload["text"]
        else:
            payload["text"] = text
        # Indexed by a text of its own (another program's), not the one its episode gives.
        own = "quarterly reimbursement paperwork"
        dense = store.embedder.embed_documents([own])[0].tolist()
        episode_dense = store.embedder.embed_documents(["file the expense report"])[0].tolist()
        assert sum(a * b for a, b in zip(dense, episode_dense, strict=True)) < 0.9
        sparse = store.bm25.document(own)
        engine.inner.upsert(
            store.collection,
            [Point(id=hit.id, dense={"dense": dense}, sparse={"bm25": sparse}, payload=payload)],
        )
        engine.failing = True
        with pytest.raises(EngineUnavailableError):
            await store.write(Episode(id_="kept", task=Task(instruction="book a flight")))
        (back,), _ = engine.scroll(store.collection, flt, limit=1)
        assert back.payload == payload  # written back as it was
        ((found,),) = engine.query(
            store.collection, [Search(Stream("dense", dense, 2), Filter(), 1)]
        )
        assert found.id == hit.id
        assert found.score == pytest.approx(1.0, abs=1e-6)
        words = store.bm25.query("reimbursement paperwork")
        assert isinstance(words, SparseVec) and words.indices
        (by_words,) = engine.query(
            store.collection, [Search(Stream("bm25", words, 2), Filter(), 2)]
        )
        assert [h.id for h in by_words] == [hit.id]
        found_episodes = await store.search("reimbursement paperwork", k=1, mode="bm25")
        assert [e.id_ for e in found_episodes] == ["kept"]
    finally:
        store.close()
        engine.inner.close()
