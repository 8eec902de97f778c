"""The turns of a store outage survive a killed process in the LlamaIndex block too.

`EpisodicMemoryBlock` built its `EpisodeRecorder` without a spill file and offered no way to
give one, so the episodes a failed write left waiting lived in memory only: a process killed
during a store outage (a deploy, the OOM killer) lost every turn of the outage. The block
takes `spill_path=` now, and a new process on the same store and spill file stores each of
those turns exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer
from sqlalchemy.ext.asyncio import create_async_engine

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

TURNS = 40
DOWN_FROM = 10  # the store fails from this turn to the end of the first process

#: One conversation through `Memory` (a small token limit, so it flushes into the block again
#: and again), its store down from turn 10; then the process is killed (SIGKILL).
_FIRST_PROCESS = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from episodex import EpisodicMemory, open_engine
    from episodex.testing import FailingEngine, HashEmbedder
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory
    from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer

    store, spill, turns, down_from = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    async def main() -> None:
        engine = FailingEngine(open_engine(path=store))
        memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        chat = Memory.from_defaults(
            session_id="first", memory_blocks=[block], tokenizer_fn=offline_tokenizer(),
            token_limit=400, token_flush_size=100,
        )
        for n in range(turns):
            engine.writes = n >= down_from
            await chat.aput(ChatMessage(role="user", content=f"question {n} " + "word " * 30))
            await chat.aget()  # what an agent does before answering
            await chat.aput(ChatMessage(role="assistant", content=f"answer {n} " + "word " * 30))
        await block.aflush(chat)  # the end of the session: the store is still down
        print(block.stats().pending, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no aclose, no atexit: a killed process

    asyncio.run(main())
    """
)


async def test_the_outage_turns_of_a_killed_process_are_stored_once(tmp_path: Path) -> None:
    store, spill = tmp_path / "store", tmp_path / "pending.jsonl"
    child = subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS, str(store), str(spill), str(TURNS), str(DOWN_FROM)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    waiting = int(child.stdout)
    assert waiting >= TURNS - DOWN_FROM  # the outage's exchanges waited when it was killed

    # The next process: same store, same spill file; the user's next conversation.
    memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    try:
        block = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=spill
        )
        assert block.stats().pending == waiting  # seen before anything is written
        chat = Memory.from_defaults(
            session_id="second",
            memory_blocks=[block],
            tokenizer_fn=offline_tokenizer(),
            async_engine=engine,
        )
        await chat.aput(ChatMessage(role="user", content="question again"))
        await chat.aput(ChatMessage(role="assistant", content="answer again"))
        stats = await block.aflush(chat)
        assert (stats.pending, stats.recorded) == (0, waiting + 1)

        rows = await memory.read_recent(1000, user_id="u1", agent_id="support")
        stored: dict[int, list[str]] = {}
        for row in rows:
            if row["conversation_id"] != "first":
                continue
            lines = row["long_summary_text"].split("\n")
            assert len(lines) == row["end_index"] - row["start_index"] + 1
            for offset, line in enumerate(lines):
                stored.setdefault(row["start_index"] + offset, []).append(
                    " ".join(line.split()[:3])
                )
        # Every message exactly once, in its place: no gap, no overlap.
        assert stored == {
            i: [f"user: question {i // 2}" if i % 2 == 0 else f"assistant: answer {i // 2}"]
            for i in range(2 * TURNS)
        }
        assert not spill.exists()
    finally:
        await engine.dispose()
        memory.close()


def test_without_spill_path_the_block_keeps_failed_writes_in_memory(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        block = EpisodicMemoryBlock(memory=memory, user_id="u1", agent_id="support")
        assert block.recorder.spill_path is None  # the default is unchanged
        spilled = EpisodicMemoryBlock(
            memory=memory, user_id="u1", agent_id="support", spill_path=tmp_path / "p.jsonl"
        )
        assert spilled.recorder.spill_path == tmp_path / "p.jsonl"
    finally:
        memory.close()
