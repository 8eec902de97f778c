"""A Qdrant Edge store made before the speaker streams gets their payload index when it opens.

Such a store has neither the `speaker_keys` index nor the `speakers` of its episodes. It is
simulated here by taking both out of a store made now, with the embedded engine's own library
(the same one episodex opens the folder with). Opening it adds the index; the old episodes
are still recalled, read and exported (with no speakers), and new ones are found by speaker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder

U, A = "u", "a"


def shard_folder(store: Path) -> Path:
    """The one collection folder of an episode store (the one holding its manifest)."""
    [folder] = [p.parent for p in store.glob("*/episodex.json")]
    return folder


def indexes(store: Path) -> dict[str, Any]:
    shard = qe.EdgeShard.load(str(shard_folder(store)))
    try:
        return {key: info.data_type for key, info in shard.info().payload_schema.items()}
    finally:
        shard.close()


def make_old(store: Path) -> None:
    """Take the speaker index and every episode's `speakers` out, as an older release wrote."""
    shard = qe.EdgeShard.load(str(shard_folder(store)))
    try:
        shard.update(qe.UpdateOperation.delete_field_index("speaker_keys"))
        records, _ = shard.scroll(qe.ScrollRequest(limit=1000, with_payload=True))
        assert records
        shard.update(
            qe.UpdateOperation.delete_payload([r.id for r in records], ["speakers", "speaker_keys"])
        )
        shard.flush()
        assert "speaker_keys" not in shard.info().payload_schema
    finally:
        shard.close()


def open_memory(store: Path, *, quantize: bool) -> EpisodicMemory:
    return EpisodicMemory(store, embedder=HashEmbedder(), splade=False, quantize=quantize)


@pytest.mark.parametrize("quantize", [False, True])
async def test_an_old_store_gets_the_speaker_index_and_recall_works(
    tmp_path: Path, *, quantize: bool
) -> None:
    store = tmp_path / "store"
    mem = open_memory(store, quantize=quantize)
    [old_id] = await mem.memorize_many(
        [
            {
                "user_id": U,
                "agent_id": A,
                "conversation_id": "old",
                "short_summary": "Caroline went hiking",
                "long_summary": "Caroline told us about hiking in the hills",
                "speakers": ["Caroline"],
            }
        ]
    )
    await mem.aclose()
    before = indexes(store)
    make_old(store)
    assert set(indexes(store)) == set(before) - {"speaker_keys"}

    # Opening alone adds the index back, a keyword index as when the store was created
    # (the folder is read once the memory has let go of it).
    await open_memory(store, quantize=quantize).aclose()
    assert indexes(store) == before
    assert before["speaker_keys"] == qe.PayloadSchemaType.Keyword
    make_old(store)
    mem = open_memory(store, quantize=quantize)
    try:
        old = await mem.get(old_id, user_id=U, agent_id=A)
        assert "speakers" not in old and "speaker_keys" not in old
        # The old episode has no speakers: recalled by its words, never by speaker.
        [item] = (await mem.recall(user_id=U, agent_id=A, query="What did Caroline do?"))[
            "previous_conversations"
        ]
        assert item["point_id"] == old_id and "speaker" not in item["streams"]
        [new_id] = await mem.memorize_many(
            [
                {
                    "user_id": U,
                    "agent_id": A,
                    "conversation_id": "new",
                    "short_summary": "A pottery class",
                    "long_summary": "Caroline took a pottery class",
                    "speakers": ["Caroline"],
                }
            ]
        )
        items = (await mem.recall(user_id=U, agent_id=A, query="caroline's pottery"))[
            "previous_conversations"
        ]
        assert {i["point_id"] for i in items} == {old_id, new_id}
        assert [i["point_id"] for i in items if "speaker" in i["streams"]] == [new_id]
        assert items[0]["point_id"] == new_id
        path = tmp_path / "export.jsonl"
        assert await mem.export(path, user_id=U, agent_id=A) == 2
        speakers = {
            json.loads(line)["conversation_id"]: json.loads(line)["speakers"]
            for line in path.read_text(encoding="utf-8").splitlines()
        }
        assert speakers == {"old": [], "new": ["Caroline"]}
    finally:
        await mem.aclose()
    # Opening again finds nothing missing and changes nothing.
    mem = open_memory(store, quantize=quantize)
    await mem.aclose()
    assert indexes(store) == before


async def test_a_store_made_now_has_every_index_at_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    mem = open_memory(store, quantize=False)
    await mem.aclose()
    have = indexes(store)
    assert {"user_id", "agent_id", "conversation_id", "speaker_keys"} <= set(have)
    assert have["speaker_keys"] == qe.PayloadSchemaType.Keyword
