"""A history given again (`agent.run(..., chat_history=...)`, a fresh `Memory` per request) is
not recorded again.

`FunctionAgent.run(user_msg, chat_history=history, memory=memory)` sets the `Memory`'s history to
`history` (`Memory.aset`), the app's copy of the whole conversation, on every run. Once `Memory`
had flushed messages, the block saw a history that no longer began with what it had recorded,
took it for a new one (as after `Memory.areset()`) and recorded the whole conversation again,
at new indexes, on every such run: each exchange stored three times after six runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

AGENT = "support"


def _question(n: int) -> str:
    return f"question {n} about the parcel and the courier"


def _answer(n: int) -> str:
    return f"answer {n} the parcel left the depot today"


def _memory(engine: AsyncEngine, block: EpisodicMemoryBlock) -> Memory:
    # A small limit: short-term memory flushes its oldest exchanges every run or two.
    return Memory.from_defaults(
        session_id="chat-1",
        memory_blocks=[block],
        tokenizer_fn=offline_tokenizer(),
        token_limit=200,
        chat_history_token_ratio=0.3,
        token_flush_size=20,
        async_engine=engine,
    )


@pytest.mark.parametrize("fresh_memory", [False, True], ids=["same-memory", "memory-per-run"])
async def test_a_history_given_to_every_run_is_stored_once(
    tmp_path: Path, *, fresh_memory: bool
) -> None:
    episodes = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    block = EpisodicMemoryBlock(memory=episodes, user_id="u1", agent_id=AGENT)
    llm = MockFunctionCallingLLM()
    turn = [0]
    llm.response_generator = lambda messages, **_: ChatMessage(  # pyright: ignore[reportAttributeAccessIssue, reportUnknownLambdaType]
        role="assistant", content=_answer(turn[0])
    )
    agent = FunctionAgent(llm=llm, tools=[])
    engines: list[AsyncEngine] = []
    history: list[ChatMessage] = []
    chat: Memory | None = None
    try:
        for n in range(8):
            turn[0] = n
            if chat is None or fresh_memory:
                engines.append(create_async_engine("sqlite+aiosqlite:///:memory:"))
                chat = _memory(engines[-1], block)
            answer = await agent.run(  # pyright: ignore[reportDeprecated] - LlamaIndex's typing
                user_msg=_question(n), chat_history=list(history), memory=chat
            )
            assert str(answer) == _answer(n)
            history += [
                ChatMessage(role="user", content=_question(n)),
                ChatMessage(role="assistant", content=_answer(n)),
            ]
        assert chat is not None
        stats = await block.aflush(chat)
        items = await episodes.read_recent(
            1000, user_id="u1", agent_id=AGENT, conversation_id="chat-1"
        )
    finally:
        for engine in engines:
            await engine.dispose()
        episodes.close()

    stored: dict[int, str] = {}
    for item in items:
        lines = str(item["long_summary_text"]).split("\n")
        assert len(lines) == item["end_index"] - item["start_index"] + 1
        for offset, line in enumerate(lines):
            assert item["start_index"] + offset not in stored, "an index stored twice"
            stored[item["start_index"] + offset] = line
    # Every message once, at its index in the conversation.
    expected = [f"user: {_question(n)}\nassistant: {_answer(n)}" for n in range(8)]
    assert [stored[i] for i in sorted(stored)] == "\n".join(expected).split("\n")
    assert sorted(stored) == list(range(16))
    assert stats.pending == 0
