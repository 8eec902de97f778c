"""No tenant's episode can sit under the point id of the store's records of unfinished writes.

A call of several engine writes (`memorize_many` of more than one batch) writes a record with
each write, under fixed point ids, and deletes them when it is done. An episode stored with one
of those ids as its `point_id` (a valid UUID, given by a caller) was overwritten by the next such
call of any user, then deleted with the records: memorized and reported stored, it was gone,
because of another tenant's write. Such ids are now refused with a `ValidationError`, and the
other user's call stores its episodes.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory

# The records' ids are derived from a fixed namespace, so anyone can compute them.
_NAMESPACE = uuid.UUID("0b6f4c0e-94d1-4c1e-a7f4-3c2b7e5d9a61")


def _record_id(n: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"pending-write/{n}"))


async def _bobs_batches(mem: EpisodicMemory) -> list[str]:
    episodes = [
        {
            "short_summary": f"bob's turn {k}",
            "long_summary": f"bob said {k}",
            "user_id": "bob",
            "agent_id": "support",
            "conversation_id": "b1",
        }
        for k in range(6)
    ]
    return await mem.memorize_many(episodes, batch_size=2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 2, 9])
async def test_a_record_id_cannot_hold_an_episode_another_tenant_would_lose(
    backend: str, tmp_path: Path, n: int
) -> None:
    with open_memory(backend, tmp_path, embedder=HashEmbedder(), splade=False) as mem:
        claimed = _record_id(n)
        for given in (claimed, claimed.upper(), "{" + claimed + "}"):
            with pytest.raises(ValidationError, match="reserved"):
                await mem.memorize(
                    short_summary="alice's note",
                    long_summary="alice said something",
                    user_id="alice",
                    agent_id="support",
                    conversation_id="a1",
                    point_id=given,
                )
        with pytest.raises(ValidationError, match=r"episode 1: .*reserved"):
            await mem.memorize_many(
                [
                    {
                        "short_summary": "fine",
                        "long_summary": "fine",
                        "user_id": "alice",
                        "agent_id": "support",
                        "conversation_id": "a1",
                    },
                    {
                        "short_summary": "alice's note",
                        "long_summary": "alice said something",
                        "user_id": "alice",
                        "agent_id": "support",
                        "conversation_id": "a1",
                        "point_id": claimed,
                    },
                ]
            )
        assert await mem.count(user_id="alice", agent_id="support") == 0  # nothing half-written
        assert len(await _bobs_batches(mem)) == 6
        assert await mem.count(user_id="bob", agent_id="support") == 6


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_episode_with_an_ordinary_id_survives_other_tenants_batches(
    backend: str, tmp_path: Path
) -> None:
    with open_memory(backend, tmp_path, embedder=HashEmbedder(), splade=False) as mem:
        own = str(uuid.uuid5(uuid.NAMESPACE_URL, "https://example.com/alice/1"))
        stored = await mem.memorize(
            short_summary="alice's note",
            long_summary="alice said something",
            user_id="alice",
            agent_id="support",
            conversation_id="a1",
            point_id=own,
        )
        assert stored == own
        await _bobs_batches(mem)
        got = await mem.get(own, user_id="alice", agent_id="support")
        assert got["short_summary_text"] == "alice's note"
