"""The embedded engine keys points by a 64-bit hash of their UUID, carried in the payload."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from episodex import Embedder, EngineError, EpisodicMemory, NotFoundError, ValidationError


def _ep(user: str, point_id: str, text: str) -> dict[str, Any]:
    return {
        "short_summary": text,
        "long_summary": text,
        "user_id": user,
        "agent_id": "a",
        "conversation_id": "c",
        "point_id": point_id,
    }


def _twin(point_id: str) -> str:
    """Another UUID with the same low 64 bits: the same integer key in the engine."""
    return str(uuid.UUID(int=(uuid.UUID(point_id).int ^ (1 << 100))))


async def test_the_uuid_comes_back_and_the_carrier_key_never_leaks(
    tmp_path: Path, embedder: Embedder
) -> None:
    mem = EpisodicMemory(path=tmp_path / "s", embedder=embedder)
    pid = str(uuid.uuid4()).upper()
    (stored,) = await mem.memorize_many([_ep("u", pid, "refund for order 7")])
    assert stored == pid.lower()
    item = await mem.get(pid.lower(), user_id="u", agent_id="a")
    res = await mem.recall(user_id="u", agent_id="a", query="refund order 7")
    recent = await mem.read_recent(1, user_id="u", agent_id="a")
    for found in (item, res["previous_conversations"][0], recent[0]):
        assert found["point_id"] == pid.lower()
        assert not any(k.startswith("_episodex") for k in found)
    lines = []
    import io

    buf = io.StringIO()
    await mem.export(buf, user_id="u", agent_id="a")
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert lines[0]["point_id"] == pid.lower() and "_episodex_id" not in lines[0]["metadata"]
    mem.close()


async def test_uuid1_ids_from_one_host_are_all_stored(tmp_path: Path, embedder: Embedder) -> None:
    # uuid1() ids from one host share their low 64 bits (clock sequence and node): the first
    # key scheme could store only the first of them (issue 14, item 5).
    mem = EpisodicMemory(path=tmp_path / "s", embedder=embedder)
    ids = [str(uuid.uuid1()) for _ in range(50)]
    assert len({uuid.UUID(i).int & ((1 << 64) - 1) for i in ids}) == 1
    stored = await mem.memorize_many([_ep("u", pid, f"note {n}") for n, pid in enumerate(ids)])
    assert stored == ids
    assert await mem.count(user_id="u", agent_id="a") == 50
    for n, pid in enumerate(ids[:5]):
        assert (await mem.get(pid, user_id="u", agent_id="a"))["short_summary_text"] == f"note {n}"
    # A twin sharing the low 64 bits is its own point, not a collision.
    twin = _twin(ids[0])
    await mem.memorize_many([_ep("mallory", twin, "mine")])
    assert (await mem.get(ids[0], user_id="u", agent_id="a"))["short_summary_text"] == "note 0"
    mem.close()


async def _old_scheme_store(tmp_path: Path, embedder: Embedder) -> EpisodicMemory:
    mem = EpisodicMemory(path=tmp_path / "s", embedder=embedder)
    mem.close()
    manifest = tmp_path / "s" / "episodes" / "episodex.json"
    data = json.loads(manifest.read_text())
    assert data["edge_point_ids"] == "u64-hash-of-uuid"
    manifest.write_text(json.dumps({**data, "edge_point_ids": "u64-of-uuid"}))
    return EpisodicMemory(path=tmp_path / "s", embedder=embedder)


async def test_a_store_of_the_first_key_scheme_still_reads_and_writes(
    tmp_path: Path, embedder: Embedder
) -> None:
    mem = await _old_scheme_store(tmp_path, embedder)
    victim = str(uuid.uuid4())
    await mem.memorize_many([_ep("alice", victim, "alice's secret")])
    mem.close()
    mem = EpisodicMemory(path=tmp_path / "s", embedder=embedder)
    assert (await mem.get(victim, user_id="alice", agent_id="a"))[
        "short_summary_text"
    ] == "alice's secret"
    # A colliding id is refused, and the refusal names no other tenant's id.
    with pytest.raises(ValidationError, match="key is taken") as caught:
        await mem.memorize_many([_ep("mallory", _twin(victim), "overwrite")])
    assert victim not in str(caught.value)
    with pytest.raises(ValidationError, match="collide in the embedded engine"):
        await mem.memorize_many(
            [_ep("bob", str(uuid.UUID(int=7)), "x"), _ep("bob", _twin(str(uuid.UUID(int=7))), "y")]
        )
    assert await mem.count(user_id="mallory", agent_id="a") == 0
    assert await mem.count(user_id="bob", agent_id="a") == 0
    # Asking for the twin id never returns the point stored under the other id.
    with pytest.raises(NotFoundError):
        await mem.get(_twin(victim), user_id="alice", agent_id="a")
    assert await mem.forget(user_id="alice", agent_id="a", point_id=_twin(victim)) == 0
    assert await mem.count(user_id="alice", agent_id="a") == 1
    mem.close()


async def test_a_store_with_uuid_point_ids_is_refused_with_advice(
    tmp_path: Path, embedder: Embedder
) -> None:
    mem = EpisodicMemory(path=tmp_path / "s", embedder=embedder)
    mem.close()
    manifest = tmp_path / "s" / "episodes" / "episodex.json"
    data = json.loads(manifest.read_text())
    assert data["edge_point_ids"] == "u64-hash-of-uuid"
    del data["edge_point_ids"]
    manifest.write_text(json.dumps(data))
    with pytest.raises(EngineError, match="export it with that version"):
        EpisodicMemory(path=tmp_path / "s", embedder=embedder)
