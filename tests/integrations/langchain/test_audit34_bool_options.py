"""Yes/no options take True or False only, refused when made otherwise.

`EpisodicMemoryMiddleware(record="no")` recorded every run, `deferred="no"` wrote in a
background thread and `search_tool="no"` gave the agent the search tool: the options were
taken by their truth, so any non-empty text meant yes. `EpisodeRecorder(deferred=...)` too.
They are now refused with `ConfigurationError`, as the core refuses a `with_stream_ranks`
that is not a bool (so are 0 and 1); the pydantic yes/no fields (`return_messages` of the
classic memory, `raise_on_failure` of the retrievers) likewise, no longer read from text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    EpisodeRecorder,
    EpisodicMemory,
    QdrantTaskStore,
    open_engine,
)
from episodex.testing import HashEmbedder
from langchain_episodex import (
    EpisodicConversationMemory,
    EpisodicMemoryMiddleware,
    EpisodicRetriever,
    TaskEpisodeRetriever,
)

NOT_BOOLS: list[object] = ["no", "false", "", 0, 1, None, [], 0.0]
MIDDLEWARE_FLAGS = ("record", "deferred", "search_tool")


@pytest.fixture
def hashed() -> Iterator[EpisodicMemory]:
    memory = EpisodicMemory(
        engine=open_engine(location=":memory:"), embedder=HashEmbedder(), splade=False
    )
    yield memory
    memory.close()


@pytest.mark.parametrize("flag", MIDDLEWARE_FLAGS)
@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
def test_the_middleware_refuses_a_yes_no_option_that_is_not_a_bool(
    hashed: EpisodicMemory, flag: str, value: object
) -> None:
    options: dict[str, Any] = {flag: value}
    with pytest.raises(ConfigurationError, match=f"{flag} must be True or False"):
        EpisodicMemoryMiddleware(hashed, user_id="u1", agent_id="a", **options)


@pytest.mark.parametrize("flag", MIDDLEWARE_FLAGS)
@pytest.mark.parametrize("value", [True, False])
async def test_the_middleware_takes_true_and_false(
    hashed: EpisodicMemory, flag: str, value: bool
) -> None:
    options: dict[str, Any] = {flag: value}
    middleware = EpisodicMemoryMiddleware(hashed, user_id="u1", agent_id="a", **options)
    if flag == "record":
        assert middleware.record is value
    elif flag == "deferred":
        assert middleware.recorder is not None
        assert middleware.recorder.deferred is value
        await middleware.recorder.aclose()
    else:
        assert len(middleware.tools) == (1 if value else 0)


@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
def test_the_recorder_refuses_a_deferred_that_is_not_a_bool(
    hashed: EpisodicMemory, value: object
) -> None:
    with pytest.raises(ConfigurationError, match="deferred must be True or False"):
        EpisodeRecorder(hashed, deferred=value)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("value", ["no", "yes", 0, 1, None])
def test_the_classic_memory_and_the_retrievers_refuse_yes_no_fields_that_are_not_bools(
    hashed: EpisodicMemory, value: object
) -> None:
    with pytest.raises(ConfigurationError, match="return_messages"):
        EpisodicConversationMemory(memory=hashed, user_id="u1", agent_id="a", return_messages=value)
    flag_given: dict[str, Any] = {"raise_on_failure": value}
    with pytest.raises(ConfigurationError, match="raise_on_failure"):
        EpisodicRetriever(memory=hashed, user_id="u1", agent_id="a", **flag_given)
    with pytest.raises(ConfigurationError, match="raise_on_failure"):
        TaskEpisodeRetriever(store=QdrantTaskStore(memory=hashed), **flag_given)
    # True and False themselves are taken.
    for flag in (True, False):
        classic = EpisodicConversationMemory(
            memory=hashed, user_id="u1", agent_id="a", return_messages=flag
        )
        assert classic.return_messages is flag
        retriever = EpisodicRetriever(
            memory=hashed, user_id="u1", agent_id="a", raise_on_failure=flag
        )
        assert retriever.raise_on_failure is flag
