"""An import into a store awaiting a re-index is refused, like `memorize`, with nothing written.

A store opened with `for_reindex=True` holds vectors of other models until `reindex()` runs,
so `memorize` raises `EmbedderMismatchError` there. `import_` embedded its episodes with the
new models and wrote them beside the old vectors without a word: those episodes were then
compared with queries of the wrong model by every memory opened with the store's own models.
Every write (memorize, import, the recorder) now refuses until the store is re-indexed.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from episodex import EmbedderMismatchError, EpisodicMemory
from episodex.plan import Filter
from episodex.testing import HashEmbedder


def _record(n: int) -> dict[str, object]:
    return {
        "short_summary": f"asked about parcel {n}",
        "long_summary": f"The user asked where parcel {n} is; the agent tracked it.",
        "user_id": "u1",
        "agent_id": "support",
        "conversation_id": f"c{n}",
    }


async def test_import_into_a_store_awaiting_reindex_writes_nothing(tmp_path: Path) -> None:
    old = EpisodicMemory(path=tmp_path, embedder=HashEmbedder(model_id="old-model"), splade=False)
    await old.memorize(**_record(1))  # pyright: ignore[reportArgumentType]
    old.close()
    export = "".join(json.dumps(_record(n)) + "\n" for n in (2, 3))

    memory = EpisodicMemory(
        path=tmp_path, embedder=HashEmbedder(model_id="new-model"), splade=False, for_reindex=True
    )
    try:
        before, _ = memory.engine.scroll("episodes", Filter(), limit=10)
        with pytest.raises(EmbedderMismatchError, match="old-model"):
            await memory.import_(io.StringIO(export))
        after, _ = memory.engine.scroll("episodes", Filter(), limit=10)
        assert [h.id for h in after] == [h.id for h in before]
        assert await memory.count(user_id="u1", agent_id="support") == 1

        await memory.reindex()  # the store is the new models' now: the import goes in
        report = await memory.import_(io.StringIO(export))
        assert len(report.imported) == 2
        assert await memory.count(user_id="u1", agent_id="support") == 3
    finally:
        memory.close()
