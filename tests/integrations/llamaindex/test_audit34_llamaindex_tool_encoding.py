"""The LlamaIndex memory tool counts its `max_tokens` in the tokens the caller names.

It counted with cl100k only, while the blocks take an encoding name, a counter or a tokenizer
(`encoding`): for an agent whose model tokenizes more finely the answer ran over the budget
meant for it.
"""

from __future__ import annotations

import pytest
from episodex import ConfigurationError, EpisodicMemory
from llama_index.memory.episodex import create_memory_search_tool

AGENT = "support"


def _characters(text: str) -> int:
    """The same count, as a counter."""
    return len(text)


def _many(text: str) -> str:
    """An encoding answering neither a count nor a list of tokens."""
    return "many"


def _by_character(text: str) -> list[str]:
    """A tokenizer far finer than cl100k: one token per character."""
    return list(text)


async def test_the_tool_answer_fits_max_tokens_of_the_given_tokenizer(
    memory: EpisodicMemory, user: str
) -> None:
    for n in range(6):
        await memory.memorize(
            short_summary=f"Refund for broken kettle number {n}",
            long_summary=f"Kettle {n} arrived cracked; the agent refunded it after a long talk.",
            user_id=user,
            agent_id=AGENT,
            conversation_id=f"c{n}",
        )
    for encoding in (_by_character, _characters):
        tool = create_memory_search_tool(
            memory, user_id=user, agent_id=AGENT, max_tokens=600, encoding=encoding
        )
        answer = str(await tool.acall(query="kettle refund"))
        assert "<episode" in answer
        assert len(answer) <= 600
    # The default still counts cl100k tokens: the same budget holds more characters.
    default = create_memory_search_tool(memory, user_id=user, agent_id=AGENT, max_tokens=600)
    assert len(str(await default.acall(query="kettle refund"))) > 600


@pytest.mark.parametrize("encoding", ["no-such-encoding", 7, _many])
def test_a_bad_encoding_is_refused_when_the_tool_is_made(
    memory: EpisodicMemory, encoding: object
) -> None:
    with pytest.raises(ConfigurationError, match="encoding"):
        create_memory_search_tool(memory, user_id="u", agent_id=AGENT, encoding=encoding)  # type: ignore[arg-type]
