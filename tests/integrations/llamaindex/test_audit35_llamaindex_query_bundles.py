"""A `QueryBundle` whose `query_str` is not a text is refused with a typed error.

LlamaIndex's `QueryBundle` is a plain dataclass: `QueryBundle(query_str=message.content)` takes
the `None` of a message without text, and a pipeline may pass a list. `EpisodicRetriever`
failed on them with a raw `AttributeError: 'NoneType' object has no attribute 'encode'`, in
`retrieve` and `aretrieve` alike. It now raises episodex's `ValidationError` saying what it
takes; a text query, and a blank one (no nodes), answer as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from llama_index.core.schema import QueryBundle
from llama_index.memory.episodex import EpisodicRetriever

AGENT = "support"


@pytest.mark.parametrize("query_str", [None, ["refund"], b"refund", 1234], ids=repr)
async def test_a_query_str_that_is_not_a_text_is_a_validation_error(
    memory: EpisodicMemory, user: str, query_str: Any
) -> None:
    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT)
    bundle = QueryBundle(query_str=query_str)
    with pytest.raises(ValidationError, match=r"query_str must be a str"):
        await retriever.aretrieve(bundle)
    with pytest.raises(ValidationError, match=r"query_str must be a str"):
        retriever.retrieve(bundle)


async def test_text_and_blank_bundles_answer_as_before(memory: EpisodicMemory, user: str) -> None:
    await memory.memorize(
        short_summary="Refund issued for order 4471",
        long_summary="The blender arrived broken; the agent refunded it.",
        user_id=user,
        agent_id=AGENT,
        conversation_id="c1",
    )
    retriever = EpisodicRetriever(memory, user_id=user, agent_id=AGENT)
    assert len(await retriever.aretrieve(QueryBundle(query_str="refund"))) == 1
    assert retriever.retrieve(QueryBundle(query_str=" ")) == []
