"""Issue 14, items 2 and 10: one shared instance never mixes users, and the sync twins never hang."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from episodex import (
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    StoreClosedError,
    SyncEpisodicMemory,
    SyncStepLessonMemory,
    ValidationError,
)
from episodex.testing import HashEmbedder

PAGE = {
    "url": "https://desk.example/t/7",
    "elements": ["[12] button 'Priority'", "[13] link 'Close'"],
}


async def _first_attempt(lessons: StepLessonMemory, user: str, wrong: str) -> None:
    await lessons.init_episode("ticket-7", user_id=user, agent_id="web", task="raise priority")
    await lessons.record_step_start(env_pre=PAGE, internal_state=f"{user} thinks", action=wrong)
    await lessons.end_episode(final_env=PAGE)


async def _second_attempt(lessons: StepLessonMemory, user: str, gate: asyncio.Event) -> str:
    await lessons.init_episode("ticket-7", user_id=user, agent_id="web", task="raise priority")
    await gate.wait()  # both attempts are open on the shared instance now
    await lessons.record_step_start(env_pre=PAGE, internal_state="again", action="click('12')")
    return await lessons.lessons_block(PAGE, "raise priority")


async def test_concurrent_attempts_on_one_lessons_instance_stay_apart() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    await _first_attempt(lessons, "alice", "click('13')")
    await _first_attempt(lessons, "bob", "click('99')")
    gate = asyncio.Event()
    alice = asyncio.create_task(_second_attempt(lessons, "alice", gate))
    bob = asyncio.create_task(_second_attempt(lessons, "bob", gate))
    await asyncio.sleep(0.05)
    gate.set()
    alice_block, bob_block = await asyncio.gather(alice, bob)
    assert "'13'" in alice_block or "Close" in alice_block
    assert "'99'" not in alice_block
    assert "'13'" not in bob_block and "Close" not in bob_block
    # Each attempt recorded its own step, under its own user.
    steps = await lessons.load_all_memories_for_session("ticket-7", user_id="alice", agent_id="web")
    assert {s.user_id for s in steps} == {"alice"}
    memory.close()


async def test_an_ambiguous_call_is_refused_not_guessed() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    lessons = StepLessonMemory.from_memory(memory)

    async def start(user: str) -> Any:
        return await lessons.init_episode("s", user_id=user, agent_id="web")

    alice, bob = await asyncio.gather(start("alice"), start("bob"))
    # This task started neither: it must say which, never pick one.
    with pytest.raises(ValidationError, match="several attempts"):
        await lessons.record_step_start(env_pre=PAGE, internal_state="x", action="click('1')")
    step = await lessons.record_step_start(
        env_pre=PAGE, internal_state="x", action="click('1')", attempt=bob
    )
    assert step.user_id == "bob" and alice.user_id == "alice"
    memory.close()


def test_sync_lessons_twin_keeps_attempts_per_thread() -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder())
    twin = SyncStepLessonMemory(StepLessonMemory.from_memory(memory))
    users: dict[str, set[str]] = {}
    barrier = threading.Barrier(2)

    def work(user: str) -> None:
        twin.init_episode("s", user_id=user, agent_id="web")
        barrier.wait()
        for n in range(5):
            twin.record_step_start(env_pre=PAGE, internal_state=f"{n}", action=f"click('{n}')")
        users[user] = {s.user_id for s in twin.steps}

    threads = [threading.Thread(target=work, args=(u,)) for u in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert users == {"alice": {"alice"}, "bob": {"bob"}}
    twin.close()
    memory.close()


def test_close_while_a_call_runs_releases_the_caller() -> None:
    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    outcome: list[BaseException | str] = []

    def slow(*args: object, **kwargs: object) -> int:
        time.sleep(1.0)
        return 0

    mem.memory.store.count = slow  # type: ignore[method-assign]

    def call() -> None:
        try:
            mem.count(user_id="u", agent_id="a")
            outcome.append("returned")
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.2)
    mem.close()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the caller was left blocked after close()"
    assert outcome and (outcome[0] == "returned" or isinstance(outcome[0], StoreClosedError))
    with pytest.raises(StoreClosedError, match="closed"):
        mem.count(user_id="u", agent_id="a")


_CLOSE_DURING_A_CALL = """
import contextlib, threading, time
from episodex import SyncEpisodicMemory, StoreClosedError
from episodex.testing import HashEmbedder

mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
release = threading.Event()
mem.memory.store.count = lambda *a, **k: release.wait(5) and 0

def call():
    with contextlib.suppress(StoreClosedError):
        mem.count(user_id="u", agent_id="a")

thread = threading.Thread(target=call)
thread.start()
time.sleep(0.3)
mem.close()
release.set()
thread.join()
print("done")
"""


def test_close_while_a_call_runs_leaves_no_pending_task_behind() -> None:
    # asyncio reports a task destroyed while pending when the interpreter exits, so the check
    # runs in a process of its own and reads what it printed on the way out.
    run = subprocess.run(
        [sys.executable, "-c", _CLOSE_DURING_A_CALL],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr
    assert "destroyed but it is pending" not in run.stderr, run.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_gets_a_typed_error_not_a_hang() -> None:
    mem = SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what a call does, then leave at once
            os.close(read)
            try:
                mem.count(user_id="u", agent_id="a")
                message = b"returned"
            except StoreClosedError as exc:
                message = b"typed: " + str(exc).encode()[:200]
            except BaseException as exc:
                message = b"raw: " + repr(exc).encode()[:200]
            os.write(write, message)
            os._exit(0)
        os.close(write)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            pytest.fail("the forked child hung on its first call")
        answer = os.read(read, 1000)
        os.close(read)
        assert answer.startswith(b"typed: ") and b"another process" in answer, answer
    finally:
        mem.close()
