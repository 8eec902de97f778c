"""A collection whose shard was made but whose manifest never was (a crash between the two).

Qdrant Edge creates a collection's shard first and writes its manifest last, so a process
killed in between leaves a shard with no manifest, and no point in it (nothing is written to a
collection before its manifest). The next opener may bring another embedder dimension, another
stream set or another quantization: it gets a collection of its own shape, and the manifest it
records describes the shard it writes to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodex import EngineError, EpisodicMemory, ItemPut, ItemRef, ItemStore, open_engine
from episodex.testing import HashEmbedder

MANIFEST = "episodex.json"


def _half_made(root: Path, collection: str) -> None:
    """Leave `collection` of the store at `root` as a crash before its manifest would."""
    (root / collection / MANIFEST).unlink()
    assert (root / collection / "edge_config.json").is_file()


def _shard_config(root: Path, collection: str) -> dict[str, object]:
    return json.loads((root / collection / "edge_config.json").read_text())


def test_a_half_made_collection_takes_the_next_openers_dimension(tmp_path: Path) -> None:
    root = tmp_path / "store"
    engine = open_engine(path=str(root))
    ItemStore(engine, HashEmbedder(dimension=64))
    engine.close()
    _half_made(root, "items")

    engine = open_engine(path=str(root))
    store = ItemStore(engine, HashEmbedder(dimension=32))
    ref = ItemRef("u", "a", ("ns",), "k")
    store.write([ItemPut(ref, {"v": 1}, text="written after the crash")])
    hits = store.search(user_id="u", agent_id="a", namespace_prefix=("ns",), query="crash")
    assert [h.key for h in hits] == ["k"]
    engine.close()

    manifest = json.loads((root / "items" / MANIFEST).read_text())
    assert manifest["dimension"] == 32
    engine = open_engine(path=str(root))
    assert ItemStore(engine, HashEmbedder(dimension=32)).get_many([ref])[0] is not None
    engine.close()


async def test_a_half_made_collection_takes_the_next_openers_streams(tmp_path: Path) -> None:
    root = tmp_path / "store"
    EpisodicMemory(root, embedder=HashEmbedder(), splade=False).close()
    _half_made(root, "episodes")

    memory = EpisodicMemory(root, embedder=HashEmbedder())  # with the learned sparse streams
    await memory.memorize(
        short_summary="a refund for order 42",
        long_summary="the user asked for a refund for order 42",
        user_id="u",
        agent_id="a",
        conversation_id="c",
    )
    found = await memory.recall(user_id="u", agent_id="a", query="refund")
    assert len(found["previous_conversations"]) == 1
    memory.close()


def test_a_half_made_collection_takes_the_next_openers_quantization(tmp_path: Path) -> None:
    root = tmp_path / "store"
    engine = open_engine(path=str(root))
    ItemStore(engine, HashEmbedder())
    engine.close()
    _half_made(root, "items")

    engine = open_engine(path=str(root), quantize=True)
    ItemStore(engine, HashEmbedder())
    engine.close()
    assert json.loads((root / "items" / MANIFEST).read_text()).get("edge_int8_quantized")
    assert _shard_config(root, "items").get("quantization_config")


def test_a_shard_holding_points_without_its_manifest_is_refused_and_kept(tmp_path: Path) -> None:
    root = tmp_path / "store"
    engine = open_engine(path=str(root))
    ref = ItemRef("u", "a", ("ns",), "k")
    ItemStore(engine, HashEmbedder()).write([ItemPut(ref, {"v": 1}, text="kept")])
    engine.close()
    manifest = (root / "items" / MANIFEST).read_text()
    _half_made(root, "items")  # not left so by a crash: someone removed the file

    engine = open_engine(path=str(root))
    with pytest.raises(EngineError, match=r"holds 1 point\(s\) but no episodex\.json"):
        ItemStore(engine, HashEmbedder(dimension=32))
    engine.close()
    assert not (root / "items" / MANIFEST).exists()

    (root / "items" / MANIFEST).write_text(manifest)
    engine = open_engine(path=str(root))
    assert ItemStore(engine, HashEmbedder()).get_many([ref])[0] is not None
    engine.close()
