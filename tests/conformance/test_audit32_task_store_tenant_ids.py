"""A task store's `user_id` and `agent_id` follow the package's one id rule.

Every other store refuses an id of more than 512 characters, one with a lone surrogate or
one of only whitespace. The task stores checked only for a blank one: a lone surrogate in a
JSONL task store's tenant failed its every write with an untyped `UnicodeEncodeError`, and a
600-character id was stored by the task stores where every other store refuses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConfigurationError, EpisodicMemory, JSONLTaskStore, QdrantTaskStore
from episodex.testing import HashEmbedder

BAD_IDS = ["x" * 513, "a\ud800b", " \t "]


@pytest.mark.parametrize("field", ["user_id", "agent_id"])
@pytest.mark.parametrize("bad", BAD_IDS, ids=["too-long", "lone-surrogate", "blank"])
def test_a_jsonl_task_store_refuses_an_id_the_package_refuses(
    tmp_path: Path, field: str, bad: str
) -> None:
    with pytest.raises(ConfigurationError, match=field):
        if field == "user_id":
            JSONLTaskStore(tmp_path, user_id=bad)
        else:
            JSONLTaskStore(tmp_path, agent_id=bad)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("field", ["user_id", "agent_id"])
@pytest.mark.parametrize("bad", BAD_IDS, ids=["too-long", "lone-surrogate", "blank"])
def test_a_qdrant_task_store_refuses_an_id_the_package_refuses(field: str, bad: str) -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    try:
        with pytest.raises(ConfigurationError, match=field):
            if field == "user_id":
                QdrantTaskStore(memory=memory, user_id=bad)
            else:
                QdrantTaskStore(memory=memory, agent_id=bad)
    finally:
        memory.close()


def test_the_longest_valid_ids_are_kept(tmp_path: Path) -> None:
    store = JSONLTaskStore(tmp_path, user_id="u" * 512, agent_id="é")
    assert (store.user_id, store.agent_id) == ("u" * 512, "é")
