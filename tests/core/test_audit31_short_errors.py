"""An error about a user's value quotes it shortened, not whole.

A query of a million spaces was refused with a `ValidationError` whose message held the whole
million-character query: every log line and adapter warning that shows the error then carried
it too. The shared checks now quote at most about 60 characters of a value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder


async def test_a_refused_huge_query_is_quoted_short(tmp_path: Path) -> None:
    async with EpisodicMemory(path=tmp_path / "s", embedder=HashEmbedder()) as mem:
        with pytest.raises(ValidationError, match="query must be a non-empty string") as caught:
            await mem.recall(user_id="u", agent_id="a", query=" " * 1_000_000)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize(
    ("option", "value"),
    [("previous_conversation_limit", "9" * 5000), ("rrf_k", "x" * 5000)],
)
async def test_a_refused_huge_option_is_quoted_short(
    tmp_path: Path, option: str, value: str
) -> None:
    async with EpisodicMemory(path=tmp_path / "s", embedder=HashEmbedder()) as mem:
        with pytest.raises(ValidationError, match=option) as caught:
            await mem.recall(user_id="u", agent_id="a", query="q", **{option: value})  # type: ignore[arg-type]
    assert len(str(caught.value)) < 300
