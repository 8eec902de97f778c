"""`quantize=True`: the embedded store keeps int8 dense vectors in memory, originals on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory


def _ep(user: str, text: str) -> dict[str, Any]:
    return {
        "short_summary": text,
        "long_summary": text,
        "user_id": user,
        "agent_id": "a",
        "conversation_id": "c",
    }


def _configs(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(root.rglob("edge_config.json"))]


async def test_a_quantized_store_records_it_and_recalls_the_same(
    tmp_path: Path, embedder: Any
) -> None:
    texts = ["refund for order 7", "the printer on floor 2 jams", "lunch at noon on friday"]
    found: dict[bool, list[str]] = {}
    for quantize in (False, True):
        path = tmp_path / f"q{quantize}"
        mem = EpisodicMemory(path=path, embedder=embedder, quantize=quantize)
        await mem.memorize_many([_ep("u", t) for t in texts])
        res = await mem.recall(user_id="u", agent_id="a", query="printer jams")
        found[quantize] = [it["short_summary_text"] for it in res["previous_conversations"]]
        mem.close()
        configs = json.dumps(_configs(path))
        assert ("Int8" in configs or "int8" in configs) is quantize, configs
    assert found[True] == found[False] and found[True][0] == texts[1]

    # Reopened with or without the flag, a quantized store stays quantized and answers.
    for flag in (True, False):
        mem = EpisodicMemory(path=tmp_path / "qTrue", embedder=embedder, quantize=flag)
        res = await mem.recall(user_id="u", agent_id="a", query="refund")
        assert res["previous_conversations"][0]["short_summary_text"] == texts[0]
        mem.close()


async def test_quantize_on_a_store_created_without_it_is_refused_and_changes_nothing(
    tmp_path: Path, embedder: Any
) -> None:
    path = tmp_path / "s"
    mem = EpisodicMemory(path=path, embedder=embedder)
    await mem.memorize_many([_ep("u", "refund for order 7")])
    mem.close()
    before = _configs(path)
    with pytest.raises(ConfigurationError, match="quantize"):
        EpisodicMemory(path=path, embedder=embedder, quantize=True)
    assert _configs(path) == before
    mem = EpisodicMemory(path=path, embedder=embedder)
    assert await mem.count(user_id="u", agent_id="a") == 1
    mem.close()


def test_quantize_is_refused_off_the_embedded_store(embedder: Any) -> None:
    with pytest.raises(ConfigurationError, match="embedded store"):
        EpisodicMemory(location=":memory:", embedder=embedder, quantize=True)


async def test_a_quantized_store_keeps_only_the_int8_copies_in_memory(
    tmp_path: Path, embedder: Any
) -> None:
    # At 100k episodes this took resident memory from 0.73x to 0.64x the raw vectors
    # (benchmarks/README.md, "Quantized store, fourth pass").
    for quantize in (False, True):
        mem = EpisodicMemory(path=tmp_path / f"q{quantize}", embedder=embedder, quantize=quantize)
        await mem.memorize(**_ep("u", "refund for order 7"))
        mem.close()
        (config,) = [
            c for c in _configs(tmp_path / f"q{quantize}") if "short" in c.get("vectors", {})
        ]
        placed = [
            *(v.get("memory") for v in config["vectors"].values()),
            *(v.get("memory") for v in config["sparse_vectors"].values()),
            config["hnsw_config"].get("memory"),
            config.get("id_tracker_memory"),
        ]
        # The payload indexes too (user, agent, conversation, flows, tools, timestamps).
        fields: list[Any] = [
            field if isinstance(field, dict) else {"type": field}
            for p in sorted((tmp_path / f"q{quantize}").rglob("payload_index/config.json"))
            for field in json.loads(p.read_text())["indexed_fields"].values()
        ]
        assert len(fields) >= 7, fields
        if quantize:
            assert placed and all(m == "cold" for m in placed), config
            assert config["quantization_config"]["scalar"]["memory"] == "cached"
            assert all(f.get("memory") == "cold" for f in fields), fields
        else:
            assert not any(placed), config
            assert not any(f.get("memory") for f in fields), fields
