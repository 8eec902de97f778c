"""A synchronous model callable gives lessons and grades, called off the event loop.

`ReflectiveMemory` and `LLMGrader` took any callable as `llm` but awaited what it returned:
a plain function (`def llm(prompt) -> str`, or a bound `model.invoke`) answered with text,
awaiting text raised `TypeError`, and `ReflectiveMemory` counted that as a failed LLM call on
every episode, so the memory silently recorded no lesson at all; `LLMGrader.grade` raised the
raw `TypeError`. A plain function is now called in a worker thread (it must not stall the
event loop for the length of a model call) and its text used; a callable that returns an
awaitable is awaited, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable
from pathlib import Path

import pytest
from episodex import (
    ConfigurationError,
    EnvState,
    Episode,
    JSONLTaskStore,
    LLMGrader,
    ReflectiveMemory,
    StepMemory,
    Task,
)

_GRADE = '{"steps": [{"step_id": "s1", "correct": true}], "task_success": true}'


class _SyncModel:
    """A synchronous str -> str model that records the thread of each call."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.threads: list[int] = []

    def __call__(self, prompt: str) -> str:
        self.threads.append(threading.get_ident())
        return self.answer


async def _lesson(prompt: str) -> str:
    return "Name the unit."


def _step() -> StepMemory:
    return StepMemory(
        step_id="s1",
        user_id="u",
        agent_id="a",
        session_id="sess",
        run_id="r",
        rep=1,
        step_num=1,
        env_pre=EnvState(url="/form", elements=["[1] button 'Save'"]),
        internal_state="save the form",
        action="click('1')",
        env_post=EnvState(url="/saved"),
    )


async def test_a_synchronous_llm_gives_each_episode_its_lesson(tmp_path: Path) -> None:
    model = _SyncModel("Check the units first.")
    with JSONLTaskStore(tmp_path) as store:
        memory = ReflectiveMemory(store, model)
        stored = await memory.record(Episode(task=Task(instruction="Convert 3 miles to km")))
        assert stored.additional_data is not None
        assert stored.additional_data["reflection"] == "Check the units first."
        assert memory.reflection_failures == 0
        assert (await store.read_recent(1))[0].additional_data == stored.additional_data
    # Called in a worker thread: the event loop runs on while the model answers.
    assert model.threads and threading.get_ident() not in model.threads


async def test_a_function_returning_an_awaitable_is_still_awaited(tmp_path: Path) -> None:
    def llm(prompt: str) -> Awaitable[str]:
        return _lesson(prompt)

    with JSONLTaskStore(tmp_path) as store:
        memory = ReflectiveMemory(store, llm)
        stored = await memory.record(Episode(task=Task(instruction="Convert 3 miles to km")))
        assert stored.additional_data == {"reflection": "Name the unit."}
        assert memory.reflection_failures == 0


async def test_a_synchronous_llm_still_meets_the_timeout(tmp_path: Path) -> None:
    release, answered = threading.Event(), threading.Event()

    def stuck(prompt: str) -> str:
        release.wait(30)  # a bound for a broken run, not a synchronisation: set below
        answered.set()
        return "too late"

    try:
        with JSONLTaskStore(tmp_path) as store:
            memory = ReflectiveMemory(store, stuck, timeout=0.05)
            episode = Episode(task=Task(instruction="Convert 3 miles to km"))
            stored = await memory.record(episode)
            # Recorded at the timeout, without waiting for the model to answer.
            assert not answered.is_set()
            assert stored == episode and memory.reflection_failures == 1
            assert [e.id_ for e in await store.read_recent(5)] == [episode.id_]
    finally:
        release.set()  # the worker thread cannot be stopped; let it end


async def test_a_synchronous_llm_grades_steps() -> None:
    model = _SyncModel(_GRADE)
    result = await LLMGrader(model).grade([_step()], task="save the form")
    assert result.task_success is True and result.grades[0].correct is True
    assert model.threads and threading.get_ident() not in model.threads


def test_a_model_object_that_is_not_callable_names_the_adapters(tmp_path: Path) -> None:
    class ChatModel:  # a framework model: invoke/ainvoke, not a callable
        async def ainvoke(self, prompt: str) -> str:
            return prompt

    with JSONLTaskStore(tmp_path) as store:
        with pytest.raises(ConfigurationError, match="from_langchain"):
            ReflectiveMemory(store, ChatModel())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="from_langchain"):
        LLMGrader(ChatModel())  # type: ignore[arg-type]
