"""Upgrading a three-stream store (made before the SPLADE stream) to the default five streams
(issue 16, items 2 and 3): refused with advice until re-indexed, then whole and searchable by
SPLADE, with the same embedder throughout."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from episodex import EmbedderMismatchError, EpisodicMemory, SyncEpisodicMemory, ValidationError
from episodex.testing import HashEmbedder

TURNS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake last weekend",
    "Caroline is researching adoption agencies",
    "Melanie's kids love the camping trips in the mountains",
]


def _export(mem: SyncEpisodicMemory) -> list[dict[str, Any]]:
    out = io.StringIO()
    mem.export(out, user_id="u", agent_id="a")
    return sorted((json.loads(line) for line in out.getvalue().splitlines()), key=str)


def test_a_three_stream_store_is_upgraded_to_splade_by_reindex(tmp_path: Path) -> None:
    path = tmp_path / "store"
    embedder = HashEmbedder(dimension=32)
    with SyncEpisodicMemory(path, embedder=embedder, splade=False) as mem:
        mem.memorize_many(
            [
                {
                    "short_summary": t,
                    "long_summary": t,
                    "user_id": "u",
                    "agent_id": "a",
                    "conversation_id": "c1",
                }
                for t in TURNS
            ]
        )
        before = _export(mem)
        with pytest.raises(ValidationError, match="splade_weight"):
            mem.recall(user_id="u", agent_id="a", query="adoption", splade_weight=1.0)

    # The new default (with SPLADE) refuses the old store and says what to run.
    with pytest.raises(EmbedderMismatchError, match=r"streams .*episodex reindex"):
        EpisodicMemory(path, embedder=embedder)

    with SyncEpisodicMemory(path, embedder=embedder, for_reindex=True) as mem:
        report = mem.reindex()
        assert (report.episodes, report.embedded, report.removed) == (4, 4, 0)
        assert _export(mem) == before  # every stored field and id unchanged
        hits = mem.recall(
            user_id="u",
            agent_id="a",
            query="which agencies did she look into to adopt a child?",
            short_weight=0,
            long_weight=0,
            bm25_weight=0,
            splade_weight=1,
            splade_short_weight=0,
        )["previous_conversations"]
        assert hits[0]["short_summary_text"] == TURNS[2]
        assert set(hits[0]["streams"]) == {"splade"}

    # Afterwards the store opens with the defaults, and a three-stream memory is refused.
    with SyncEpisodicMemory(path, embedder=embedder) as mem:
        assert _export(mem) == before
        top = mem.recall(user_id="u", agent_id="a", query="adoption agencies")
        assert {"splade", "splade_short"} <= set(top["previous_conversations"][0]["streams"])
    with pytest.raises(EmbedderMismatchError, match="streams"):
        EpisodicMemory(path, embedder=embedder, splade=False)
