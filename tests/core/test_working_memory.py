from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from episodex import MemKey, MemoryEntry, UnknownTagError, ValidationError, WorkingMemory

FRAMEWORK_KEYS = {
    "available_actions",
    "action",
    "next_planned_action",
    "observation",
    "raw_action_output",
    "reward",
    "task_category",
    "thought",
    "reflection",
    "subproblem",
    "diverse_next_actions",
    "db_query",
    "rag_retrieval",
    "search_query",
    "search_link",
    "search_snippet",
    "search_summary",
    "search_text",
    "search_title",
    "full_episode_rewards",
    "full_episode_trajectory",
    "trajectory",
}


def test_framework_keys_are_registered() -> None:
    for name in FRAMEWORK_KEYS:  # the first names episodex used still name registered keys
        assert MemKey.is_registered(name) and MemKey(name) in MemKey.registered()
        assert getattr(MemKey, name.upper()) is MemKey(name)
    assert MemKey.OBSERVATION == "_text_obs"
    assert repr(MemKey.THOUGHT) == "<MemKey.THOUGHT: '_thought'>"


def test_user_keys_can_be_registered_once() -> None:
    plan = MemKey.register("plan_step")
    assert MemKey.register("plan_step") is plan
    assert MemKey("plan_step") is plan and MemKey.is_registered("plan_step")
    wm = WorkingMemory()
    wm.store("open the fridge", plan)
    entry = wm.retrieve_entry("plan_step")
    assert entry is not None and entry.content == "open the fridge"
    for bad in ("", "Plan", "1st", "has space", "x" * 65):
        with pytest.raises(ValidationError):
            MemKey.register(bad)


def test_unknown_tags_raise_a_typed_error() -> None:
    wm = WorkingMemory()
    with pytest.raises(UnknownTagError, match=r"MemKey\.register"):
        wm.store("x", "obsrvation")
    with pytest.raises(UnknownTagError):
        wm.retrieve_entry({"nope": 1.0})
    with pytest.raises(UnknownTagError):
        MemKey("never_registered")
    with pytest.raises(KeyError):  # UnknownTagError is also a KeyError
        wm.rename(MemKey.THOUGHT, "nope")
    assert len(wm) == 0


def test_store_accepts_one_key_a_list_or_a_set() -> None:
    wm = WorkingMemory()
    a = wm.store("a", MemKey.OBSERVATION)
    b = wm.store("b", [MemKey.THOUGHT, "reflection"])
    c = wm.store("c", {MemKey.ACTION})
    assert a.tags == {MemKey.OBSERVATION}
    assert b.tags == {MemKey.THOUGHT, MemKey.REFLECTION}
    assert c.tags == {MemKey.ACTION}
    assert list(wm) == [a, b, c]
    with pytest.raises(ValidationError, match="at least one"):
        wm.store("d", [])
    with pytest.raises(ValidationError, match="not weights"):
        wm.store("d", {MemKey.ACTION: 2.0})
    with pytest.raises(ValidationError):
        wm.store("d", 42)  # type: ignore[arg-type]


def test_each_entry_gets_its_own_creation_time() -> None:
    wm = WorkingMemory()
    before = datetime.now(UTC)
    first = wm.store(1, MemKey.REWARD)
    time.sleep(0.002)
    second = wm.store(2, MemKey.REWARD)
    assert before <= first.created_at < second.created_at <= datetime.now(UTC)
    made = MemoryEntry(content=1, tags=frozenset({MemKey.REWARD}))
    time.sleep(0.002)
    assert MemoryEntry(content=1, tags=frozenset({MemKey.REWARD})).created_at > made.created_at


def test_retrieve_picks_the_best_summed_weight_and_the_newest_on_ties() -> None:
    wm = WorkingMemory()
    obs = wm.store("obs", MemKey.OBSERVATION)
    both = wm.store("obs+thought", [MemKey.OBSERVATION, MemKey.THOUGHT])
    newer_obs = wm.store("newer obs", MemKey.OBSERVATION)
    assert wm.retrieve_entry([MemKey.OBSERVATION, MemKey.THOUGHT]) is both  # 2.0 beats 1.0
    assert wm.retrieve_entry(MemKey.OBSERVATION) is newer_obs  # all 1.0: the newest
    assert wm.retrieve_all_entries(MemKey.OBSERVATION) == [newer_obs, both, obs]
    assert wm.retrieve_entry({MemKey.OBSERVATION: 1.0, MemKey.THOUGHT: -2.0}) is newer_obs
    assert wm.retrieve_entry({MemKey.THOUGHT: -1.0}) is None  # best score <= 0
    assert wm.retrieve_entry({MemKey.OBSERVATION: 0.0}) is None
    assert wm.retrieve_entry(MemKey.ACTION) is None
    assert wm.retrieve_all_entries(MemKey.ACTION) == []
    with pytest.raises(ValidationError, match="weight"):
        wm.retrieve_entry({MemKey.OBSERVATION: float("inf")})
    with pytest.raises(ValidationError, match="weight"):
        wm.retrieve_entry({MemKey.OBSERVATION: "high"})  # type: ignore[dict-item]


def test_contains() -> None:
    wm = WorkingMemory()
    entry = wm.store("x", MemKey.THOUGHT)
    assert MemKey.THOUGHT in wm and "thought" in wm and [MemKey.ACTION, MemKey.THOUGHT] in wm
    assert MemKey.ACTION not in wm
    assert entry in wm
    assert MemoryEntry(content="x", tags=frozenset({MemKey.THOUGHT})) not in wm


def test_add_tags_delete_rename_reset() -> None:
    wm = WorkingMemory()
    a = wm.store("a", MemKey.SEARCH_QUERY)
    b = wm.store("b", MemKey.SEARCH_QUERY)
    c = wm.store("c", MemKey.SEARCH_LINK)
    assert wm.add_tags(a, MemKey.SEARCH_SUMMARY) == 1
    assert a.tags == {MemKey.SEARCH_QUERY, MemKey.SEARCH_SUMMARY}
    assert wm.add_tags(MemKey.SEARCH_LINK, [MemKey.SEARCH_TITLE]) == 1
    assert c.tags == {MemKey.SEARCH_LINK, MemKey.SEARCH_TITLE}
    assert wm.rename(MemKey.SEARCH_QUERY, MemKey.DB_QUERY) == 2
    assert wm.retrieve_all_entries(MemKey.DB_QUERY) == [b, a]
    assert MemKey.SEARCH_QUERY not in wm
    assert wm.delete(b) == 1 and list(wm) == [a, c]
    assert wm.delete(MemKey.SEARCH_TITLE) == 1 and list(wm) == [a]
    assert wm.delete(MemKey.ACTION) == 0
    with pytest.raises(ValidationError, match="not in this working memory"):
        wm.delete(b)
    with pytest.raises(ValidationError):
        wm.add_tags(b, MemKey.ACTION)
    wm.reset()
    assert len(wm) == 0 and wm.retrieve_entry(MemKey.DB_QUERY) is None
