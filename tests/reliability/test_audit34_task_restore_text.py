"""A task episode restored after a failed server write is indexed by a text, never by nothing.

A write a Qdrant server applied and then failed to answer for is taken back: the point it
replaced is written back, its vectors made again from its stored `text`. A stored point without
a readable `text` (written by another program or an older release; every read still finds it
by its episode record) was made again from an empty string, so after the failed write it could
no longer be found by any search. It is now indexed by the text its episode gives, the one a
new write of it would index; its payload is written back as it was.

The failing engine is qdrant-client's `:memory:`, wrapped to apply the next upsert and then
raise, reporting the kind `server`.
"""

from __future__ import annotations

from typing import cast

import pytest
from episodex import Engine, EngineUnavailableError, Episode, QdrantTaskStore, Task, open_engine
from episodex.plan import Filter, Match, Point
from episodex.testing import HashEmbedder

from ._support import AppliedThenFailed


@pytest.mark.parametrize("text", [None, "  ", 7], ids=["missing", "blank", "number"])
async def test_a_restored_episode_without_a_readable_text_is_still_found(
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
        words = "file the expense report"
        point = Point(
            id=hit.id,
            dense={"dense": store.embedder.embed_documents([words])[0].tolist()},
            sparse={"bm25": store.bm25.document(words)},
            payload=payload,
        )
        engine.inner.upsert(store.collection, [point])
        engine.failing = True
        with pytest.raises(EngineUnavailableError):
            await store.write(Episode(id_="kept", task=Task(instruction="book a flight")))
        (back,), _ = engine.scroll(store.collection, flt, limit=1)
        assert back.payload == payload  # written back as it was
        found = await store.search("file the expense report", k=1, mode="bm25")
        assert [e.id_ for e in found] == ["kept"]
        found = await store.search("file the expense report", k=1, mode="dense")
        assert [e.id_ for e in found] == ["kept"]
    finally:
        store.close()
        engine.inner.close()
