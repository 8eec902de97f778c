"""A copied episode or step memory is validated again before it is written.

The owner check of `memorize_many`, `import_` and `store_memories` compares point ids as
text, and an instance passed to them was written as it was. Pydantic does not validate
`model_copy(update=...)`, so a copy could carry its id in another spelling of the same UUID
(upper case): the check took the two spellings for two ids while the engine wrote one
point, and user B's episode replaced user A's, in one call or across calls. Such an
instance is now validated again (its id made canonical), so the owner check sees one id.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    ConversationEpisode,
    StepLessonMemory,
    StepMemory,
    ValidationError,
)
from episodex.testing import HashEmbedder

from ._support import BACKENDS, open_memory


def _episode(user: str, summary: str, point_id: str) -> ConversationEpisode:
    made = ConversationEpisode.parse(
        {
            "user_id": user,
            "agent_id": "support",
            "conversation_id": "c1",
            "short_summary": summary,
            "long_summary": f"{summary}, at length",
        }
    )
    # A copy with its id changed, the way pydantic lets one be made: not validated.
    return made.model_copy(update={"point_id": point_id})


def _step(user: str, reason: str, id_: str) -> StepMemory:
    made = StepMemory(
        step_id="s1",
        user_id=user,
        agent_id="web",
        session_id="ticket-7",
        run_id="run-1",
        rep=1,
        step_num=1,
        env_pre={"url": "https://app.test/tickets/7", "elements": ["[12] button'Priority'"]},  # pyright: ignore[reportArgumentType]
        internal_state="set ticket 7 to high priority",
        action="click('12')",
        action_element_text="Priority",
        outcome="success",
        outcome_reason=reason,
    )
    return made.model_copy(update={"id": id_})


@pytest.mark.parametrize("backend", BACKENDS)
async def test_one_call_cannot_replace_another_users_episode_by_spelling(
    backend: str, tmp_path: Path
) -> None:
    point_id = str(uuid.uuid4())
    with open_memory(backend, tmp_path, embedder=HashEmbedder(), splade=False) as mem:
        alice = _episode("alice", "Refund for order 1234", point_id)
        bob = _episode("bob", "Bob's address", point_id.upper())
        with pytest.raises(ValidationError, match=r"episode 1: .*another user or agent"):
            await mem.memorize_many([alice, bob])
        assert await mem.count(user_id="alice", agent_id="support") == 0
        assert await mem.count(user_id="bob", agent_id="support") == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_later_call_cannot_replace_another_users_episode_by_spelling(
    backend: str, tmp_path: Path
) -> None:
    point_id = str(uuid.uuid4())
    with open_memory(backend, tmp_path, embedder=HashEmbedder(), splade=False) as mem:
        assert await mem.memorize_many([_episode("alice", "Refund", point_id)]) == [point_id]
        with pytest.raises(ValidationError, match="already belongs to another user or agent"):
            await mem.memorize_many([_episode("bob", "Bob's address", point_id.upper())])
        stored: dict[str, Any] = await mem.get(point_id, user_id="alice", agent_id="support")
        assert stored["short_summary_text"] == "Refund"
        assert await mem.count(user_id="bob", agent_id="support") == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_same_owner_rewriting_its_episode_by_another_spelling_gets_one_id(
    backend: str, tmp_path: Path
) -> None:
    point_id = str(uuid.uuid4())
    with open_memory(backend, tmp_path, embedder=HashEmbedder(), splade=False) as mem:
        first = _episode("alice", "Refund", point_id)
        again = _episode("alice", "Refund, issued", point_id.upper())
        # One owner naming its id twice in a call keeps the last, as before.
        assert await mem.memorize_many([first, again]) == [point_id, point_id]
        stored: dict[str, Any] = await mem.get(point_id, user_id="alice", agent_id="support")
        assert stored["short_summary_text"] == "Refund, issued"
        assert await mem.count(user_id="alice", agent_id="support") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_step_memory_of_another_user_cannot_be_replaced_by_spelling(
    backend: str, tmp_path: Path
) -> None:
    id_ = str(uuid.uuid4())
    with open_memory(backend, tmp_path, embedder=HashEmbedder()) as mem:
        lessons = StepLessonMemory.from_memory(mem)
        assert await lessons.store_memories([_step("alice", "a", id_)]) == [id_]
        # Loaded back, it carries its embedding: written as it is, not re-made.
        (alice,) = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="alice", agent_id="web"
        )
        bob = alice.model_copy(update={"id": id_.upper(), "user_id": "bob"})
        with pytest.raises(ValidationError, match="already belongs to another"):
            await lessons.store_memories([bob])
        other = alice.model_copy(update={"id": str(uuid.uuid4()), "session_id": "t2"})
        with pytest.raises(ValidationError, match="memory 1: "):
            await lessons.store_memories([other, bob.model_copy(update={"id": other.id.upper()})])
        (kept,) = await lessons.load_all_memories_for_session(
            "ticket-7", user_id="alice", agent_id="web"
        )
        assert (kept.id, kept.user_id, kept.outcome_reason) == (id_, "alice", "a")
        assert await lessons.count("ticket-7", user_id="bob", agent_id="web") == 0
        assert await lessons.count("t2", user_id="alice", agent_id="web") == 0
