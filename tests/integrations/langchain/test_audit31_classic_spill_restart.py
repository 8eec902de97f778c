"""The turns of a store outage survive a killed process in the classic LangChain memory too.

`EpisodicConversationMemory` built its `EpisodeRecorder` without a spill file and offered no
way to give one (its `extra="forbid"` refused `spill_path=`), so the exchanges a failed write
left waiting lived in memory only: a process killed during a store outage lost every exchange
of the outage. It takes `spill_path=` now, and a new process on the same store and spill file
stores each of those exchanges exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from episodex import EpisodicMemory
from episodex.testing import HashEmbedder
from langchain_episodex import EpisodicConversationMemory

TURNS = 120
DOWN_FROM = 70  # the store fails from this exchange to the end of the first process

#: A chain's memory over 120 exchanges (sync, as a classic chain calls it), its store down
#: from exchange 70; then the process is killed (SIGKILL).
_FIRST_PROCESS = textwrap.dedent(
    """
    import os, signal, sys
    from episodex import EpisodicMemory, open_engine
    from episodex.testing import FailingEngine, HashEmbedder
    from langchain_episodex import EpisodicConversationMemory

    store, spill, turns, down_from = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    engine = FailingEngine(open_engine(path=store))
    memory = EpisodicMemory(engine=engine, embedder=HashEmbedder(), splade=False)
    chain_memory = EpisodicConversationMemory(
        memory=memory, user_id="u1", agent_id="support", conversation_id="c1", spill_path=spill
    )
    for n in range(turns):
        engine.writes = n >= down_from
        chain_memory.load_memory_variables({"input": f"question {n}"})
        chain_memory.save_context({"input": f"question {n}"}, {"output": f"answer {n}"})
    print(chain_memory.stats().pending, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no flush, no atexit: a killed process
    """
)


def test_the_outage_exchanges_of_a_killed_process_are_stored_once(tmp_path: Path) -> None:
    store, spill = tmp_path / "store", tmp_path / "pending.jsonl"
    child = subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS, str(store), str(spill), str(TURNS), str(DOWN_FROM)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert int(child.stdout) == TURNS - DOWN_FROM  # waiting when it was killed

    # The next process: same store, same spill file, the conversation goes on.
    memory = EpisodicMemory(path=store, embedder=HashEmbedder(), splade=False)
    try:
        chain_memory = EpisodicConversationMemory(
            memory=memory, user_id="u1", agent_id="support", conversation_id="c1", spill_path=spill
        )
        assert chain_memory.stats().pending == TURNS - DOWN_FROM  # seen before any write
        for n in range(TURNS, TURNS + 3):
            chain_memory.save_context({"input": f"question {n}"}, {"output": f"answer {n}"})
        assert chain_memory.flush() == 0
        rows = memory.store.read_recent(10_000, user_id="u1", agent_id="support")
        # Every exchange exactly once.
        assert Counter(row["long_summary_text"] for row in rows) == Counter(
            f"user: question {n}\nassistant: answer {n}" for n in range(TURNS + 3)
        )
        assert not spill.exists()
    finally:
        memory.close()


def test_the_default_keeps_failed_writes_in_memory(tmp_path: Path) -> None:
    memory = EpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder(), splade=False)
    try:
        plain = EpisodicConversationMemory(memory=memory, user_id="u1", agent_id="support")
        assert plain.recorder.spill_path is None  # the default is unchanged
        spilled = EpisodicConversationMemory(
            memory=memory, user_id="u1", agent_id="support", spill_path=tmp_path / "p.jsonl"
        )
        assert spilled.recorder.spill_path == tmp_path / "p.jsonl"
    finally:
        memory.close()
