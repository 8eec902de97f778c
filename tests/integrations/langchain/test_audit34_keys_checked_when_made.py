"""A chain key that names no input is refused when the LCEL runnable or classic memory is made.

`recall_episodes(input_key=...)` took any value (`""`, a number, None) and
`EpisodicConversationMemory` a blank `input_key`, `output_key` or `memory_key`: no chain has
such a key (nor a prompt such a variable), so every call of the chain failed mid-run, with
"the chain input has no ''", instead of the piece being refused when it was made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodex import ConfigurationError, EpisodicMemory
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodicConversationMemory, recall_episodes

BAD_KEYS: list[Any] = ["", "   ", "\n"]


@pytest.fixture
def hashed() -> Iterator[EpisodicMemory]:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    yield memory
    memory.close()


def test_recall_episodes_refuses_an_input_key_that_names_no_input(hashed: EpisodicMemory) -> None:
    for key in [*BAD_KEYS, 5, None]:
        with pytest.raises(ConfigurationError, match="input_key"):
            recall_episodes(hashed, user_id="u1", agent_id="support", input_key=key)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("field", ["input_key", "output_key", "memory_key"])
def test_the_classic_memory_refuses_a_blank_key(hashed: EpisodicMemory, field: str) -> None:
    for key in BAD_KEYS:
        with pytest.raises(ConfigurationError, match=field):
            EpisodicConversationMemory(memory=hashed, user_id="u1", **{field: key})


async def test_keys_that_name_an_input_are_still_taken(hashed: EpisodicMemory) -> None:
    recall = recall_episodes(hashed, user_id="u1", agent_id="support", input_key="question")
    assert await recall.ainvoke({"question": "refund?"}) == ""
    chat = EpisodicConversationMemory(
        memory=hashed, user_id="u1", agent_id="support", input_key="q", output_key="a"
    )
    await chat.asave_context({"q": "Where is my refund?", "other": 1}, {"a": "Sent."})
    assert "Where is my refund?" in await recall.ainvoke({"question": "refund"})
