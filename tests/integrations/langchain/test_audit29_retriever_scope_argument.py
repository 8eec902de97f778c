"""A retriever call that names `scope` gets a typed error, and never reads another user's memory.

`EpisodicRetriever` passes the ids it resolved to the retrieval as an internal `scope`
argument. A call giving `scope=` itself (a `MemoryScope`, or anything) raised a bare
`TypeError` ("got multiple values for keyword argument") from LangChain, sync and async.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory, MemoryScope, ValidationError
from langchain_episodex import EpisodicRetriever


async def test_a_call_giving_scope_is_refused_with_a_typed_error(memory: EpisodicMemory) -> None:
    retriever = EpisodicRetriever(memory=memory, user_id="u1", agent_id="support")
    other = MemoryScope("u2", "support", None)
    with pytest.raises(ValidationError, match="scope"):
        retriever.invoke("refund", scope=other)
    with pytest.raises(ValidationError, match="scope"):
        await retriever.ainvoke("refund", scope=other)
    # The ids of a call are given by name, as always.
    assert retriever.invoke("refund", user_id="u2") == []
