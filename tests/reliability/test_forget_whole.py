"""A forget that fails deletes nothing: forgetting a conversation never stops halfway.

The forget used to delete the listed episodes 1,024 at a time, so an engine failure on a later
chunk left the first ones deleted and the rest stored. On the embedded engine and qdrant-client's
`:memory:` the delete is now one operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import engine_options
from episodex import EngineUnavailableError, EpisodicMemory, open_engine
from episodex.plan import Filter
from episodex.testing import FailingEngine, HashEmbedder

_N = 2500


class _FailsOnSecondDelete(FailingEngine):
    """Deletes once, then fails every delete, as a server going away mid-forget does."""

    __test__ = False

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.deletes = 0

    def delete(self, collection: str, flt: Filter) -> None:
        self.deletes += 1
        self.writes = self.deletes > 1
        super().delete(collection, flt)


def _eps(conversation: str, n: int) -> Sequence[dict[str, Any]]:
    return [
        {
            "short_summary": f"turn {i} of {conversation}: the invoice was paid",
            "long_summary": f"turn {i}: the customer paid invoice {i}",
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": conversation,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("backend", ["edge", "memory"])
async def test_a_failing_forget_of_a_large_conversation_deletes_none_of_it(
    tmp_path: Path, backend: str
) -> None:
    path, options = engine_options(backend, tmp_path)
    engine = _FailsOnSecondDelete(open_engine(path=str(path) if path else None, **options))
    mem = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    try:
        await mem.memorize_many([*_eps("big", _N), *_eps("other", 3)])
        engine.deletes = 0  # memorize_many's own delete (of its records) is not the forget's
        deleted = await mem.forget(user_id="u", agent_id="a", conversation_id="big")
        assert deleted == _N
        assert await mem.count(user_id="u", agent_id="a", conversation_id="big") == 0
        assert engine.deletes == 1
        assert await mem.count(user_id="u", agent_id="a", conversation_id="other") == 3
        # The next delete fails: that forget deletes nothing.
        with pytest.raises(EngineUnavailableError):
            await mem.forget(user_id="u", agent_id="a", everything=True)
        assert await mem.count(user_id="u", agent_id="a", conversation_id="other") == 3
    finally:
        mem.close()
