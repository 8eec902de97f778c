"""Working memory as the original (Pangu-Agent) design shaped it: contents from `retrieve`,
the original `MemKey` members, and ties that survive float rounding."""

from __future__ import annotations

import pytest
from episodex import MemKey, MemoryEntry, UnknownTagError, WorkingMemory

# The original enum: member name -> value, in its order.
ORIGINAL = {
    "AVAILABLE_ACTIONS": "_available_actions",
    "EXTERNAL_ACTION": "_action",
    "NEXT_PLANNED_ACTION": "_next_planned_action",
    "OBSERVATION": "_text_obs",
    "RAW_ACTION_OUTPUT": "_raw_action_output",
    "REWARD": "_reward",
    "TASK_CATEGORY": "_task_category",
    "THOUGHT": "_thought",
    "REFLECTION": "_reflection",
    "SUBPROBLEM": "_subproblem",
    "NEXT_PLANNED_ACTION_DIVERSE": "_next_possible_action_diverse",
    "DB_QUERY": "_db_query",
    "RAG_RETRIEVAL": "_rag_retrieval",
    "GOOGLE_QUERY": "_google_query",
    "LINK_RETRIEVED": "_link_retrieved",
    "NUM_CHUNKS": "_num_chunks",
    "SNIPPET_RETRIEVED": "_snippet_retrieved",
    "SUMMARIZED_TEXT": "_summarized_text",
    "TEXT_RETRIEVED": "_text_retrieved",
    "TITLE_RETRIEVED": "_title_retrieved",
    "FULL_EPS_REWARDS": "_full_eps_rewards",
    "FULL_EPS_TRAJECTORY": "_full_eps_trajectory",
    "TRAJECTORY": "_trajectory",
}


def test_retrieve_and_retrieve_all_return_contents_and_entries_stay_available() -> None:
    wm = WorkingMemory()
    wm.store({"page": 1}, MemKey.OBSERVATION)
    wm.store("find the key", [MemKey.THOUGHT, MemKey.OBSERVATION])
    newest = wm.store("the door", MemKey.OBSERVATION)
    assert wm.retrieve([MemKey.OBSERVATION, MemKey.THOUGHT]) == "find the key"
    assert wm.retrieve(MemKey.OBSERVATION) == "the door"  # all 1.0: the newest
    assert wm.retrieve_all(MemKey.OBSERVATION) == ["the door", "find the key", {"page": 1}]
    assert wm.retrieve(MemKey.REWARD) is None and wm.retrieve_all(MemKey.REWARD) == []
    entry = wm.retrieve_entry(MemKey.OBSERVATION)
    assert isinstance(entry, MemoryEntry) and entry is newest
    assert [e.content for e in wm.retrieve_all_entries(MemKey.OBSERVATION)] == [
        "the door",
        "find the key",
        {"page": 1},
    ]
    # Stored content comes back as it was, whatever its type.
    assert wm.retrieve({MemKey.OBSERVATION: 1.0, MemKey.THOUGHT: -5.0}) == "the door"


def test_memkey_offers_the_original_members_names_and_values() -> None:
    for name, value in ORIGINAL.items():
        key = getattr(MemKey, name)
        assert key == value and key.value == value and key.name == name
        assert MemKey[name] is key and MemKey(value) is key and value in MemKey
    assert MemKey.NUM_CHUNKS == "_num_chunks"
    members = list(MemKey)
    assert members[: len(ORIGINAL)] == list(ORIGINAL.values())  # the original order
    assert len(set(members)) == len(members) == len(MemKey)  # each key once
    assert {MemKey.OBSERVATION, MemKey.THOUGHT} <= set(MemKey)
    # The names episodex used first still name the same keys.
    assert MemKey.ACTION is MemKey.EXTERNAL_ACTION and MemKey("action") is MemKey.EXTERNAL_ACTION
    assert (
        MemKey.SEARCH_QUERY is MemKey.GOOGLE_QUERY and MemKey["SEARCH_QUERY"] is MemKey.GOOGLE_QUERY
    )
    assert MemKey("observation") is MemKey.OBSERVATION
    with pytest.raises(UnknownTagError):
        MemKey["NOPE"]
    assert "nope" not in MemKey


def test_registered_keys_are_accepted_and_iterated() -> None:
    scratch = MemKey.register("scratchpad_note")
    assert scratch.name == "SCRATCHPAD_NOTE" and scratch.value == "scratchpad_note"
    assert MemKey["SCRATCHPAD_NOTE"] is scratch and scratch in set(MemKey)
    assert list(MemKey).count(scratch) == 1
    assert MemKey.register("_thought") is MemKey.THOUGHT  # an existing value: the same key
    wm = WorkingMemory()
    wm.store("draft", {scratch, MemKey.THOUGHT})
    assert wm.retrieve("scratchpad_note") == "draft"
    assert wm.retrieve({"_thought": 1.0}) == "draft"


def test_ties_on_summed_weights_allow_float_rounding_and_the_newest_wins() -> None:
    wm = WorkingMemory()
    wm.store("older, 0.1 + 0.2", [MemKey.OBSERVATION, MemKey.THOUGHT])
    wm.store("newer, 0.3", MemKey.REWARD)
    weights = {MemKey.OBSERVATION: 0.1, MemKey.THOUGHT: 0.2, MemKey.REWARD: 0.3}
    assert 0.1 + 0.2 != 0.3  # exact comparison would call the older entry the winner
    assert wm.retrieve(weights) == "newer, 0.3"
    assert wm.retrieve_all(weights) == ["newer, 0.3", "older, 0.1 + 0.2"]
    # A clearly higher score still wins over a newer one.
    wm.store("newest, 0.2", MemKey.THOUGHT)
    assert wm.retrieve(weights) == "newer, 0.3"
    # A score that rounds to zero is not above 0.
    wm2 = WorkingMemory()
    wm2.store("x", [MemKey.OBSERVATION, MemKey.THOUGHT, MemKey.REWARD])
    assert wm2.retrieve({MemKey.OBSERVATION: 0.1, MemKey.THOUGHT: 0.2, MemKey.REWARD: -0.3}) is None
