"""A recall in flight while a re-index switches the collection answers with the new models.

A re-index switches the collection's name to the re-embedded copy, then hands the memory the
store built with the new embedder. A recall that had already taken the old store (it runs in a
worker thread) embedded its query with the old model and searched the switched collection:
with embedders of the same dimension (the bundled MiniLM and another 384-dimension model) its
dense streams silently compared vectors of two different models; with other dimensions it
failed with a dimension `EngineError`. Writes were already carried over to the new store; a
recall now is too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, cast

from episodex import Engine, SyncEpisodicMemory, default_embedder
from episodex.testing import HashEmbedder

QUERY = "a refund for the blue kettle"


def _episode(i: int) -> dict[str, Any]:
    topics = ["a refund for the blue kettle", "a late train to Leeds", "the printer on floor 3"]
    return {
        "short_summary": f"{topics[i % 3]} (case {i})",
        "long_summary": f"the user asked about {topics[i % 3]}; the agent answered case {i}",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": f"c{i % 4}",
    }


class _RecallDuringSwitch:
    """The real engine; once the re-index has switched, another thread recalls."""

    def __init__(self, inner: Engine, recall: Any) -> None:
        self.inner = inner
        self.recall = recall
        self.reader: threading.Thread | None = None

    def engine(self) -> Engine:
        return cast(Engine, self)

    def switch_collection(self, collection: str, staging: str) -> None:
        self.inner.switch_collection(collection, staging)  # type: ignore[attr-defined]
        self.reader = threading.Thread(target=self.recall)
        self.reader.start()
        # Long enough for a recall that does not wait for the switch to finish to run whole.
        self.reader.join(timeout=2.0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_recall_across_the_switch_uses_the_new_embedder(tmp_path: Path) -> None:
    # Both 384 dimensions: the engine cannot tell the two models' vectors apart.
    old = HashEmbedder(dimension=384, model_id="test/hash-384")
    with SyncEpisodicMemory(tmp_path / "s", embedder=old, splade=False) as base:
        base.memorize_many([_episode(i) for i in range(30)])
        answers: list[Any] = []
        failures: list[BaseException] = []

        def recall() -> None:
            try:
                # `mem.store` is still the old store here: the memory takes the new one only
                # after the switch, as a recall already under way holds the old one.
                answers.append(mem.store.recall(user_id="u", agent_id="a", query=QUERY))
            except BaseException as exc:  # reported below, not lost in the thread
                failures.append(exc)

        wrapper = _RecallDuringSwitch(base.engine, recall)
        mem = SyncEpisodicMemory(engine=wrapper.engine(), embedder=old, splade=False)
        try:
            mem.reindex(default_embedder(), batch_size=16)
            assert wrapper.reader is not None
            wrapper.reader.join(timeout=60)
            assert not failures and len(answers) == 1
            after = mem.recall(user_id="u", agent_id="a", query=QUERY)
            assert answers[0] == after  # the same hits, the same dense scores and ranks
        finally:
            mem.close()
