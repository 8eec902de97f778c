"""`StepLessonMemory`: an agent learns from its earlier attempts at the same task.

Each step an agent takes (the state it saw, its reasoning, its action) is recorded, stored,
then graded by a `Grader`. On the next attempt (rep) of the same session, the graded steps
whose page looks like the current one come back as REPEAT (worked) and AVOID (failed) lessons.

Every read and write is confined to one user, one agent and one session: each filter starts
from `lesson_scope` (`store.py`), which needs all three.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Unpack

from episodex._common.errors import ConfigurationError, ValidationError
from episodex._common.host import EngineHost
from episodex._common.model import parse_to_write
from episodex._common.sync import SyncTwin, blocking, forward, in_thread
from episodex._common.validation import require_encodable, require_id, require_int, require_weight
from episodex._embedders.base import Embedder
from episodex._embedders.resolve import resolve_embedder
from episodex._engines.base import Engine
from episodex._engines.plan import Match, MatchAny, Range
from episodex._lessons.block import format_lessons
from episodex._lessons.graders import Grader
from episodex._lessons.model import (
    EnvState,
    GradingResult,
    RetrievedLesson,
    StepMemory,
)
from episodex._lessons.ranking import LessonOptions, check_unit, rank_lessons
from episodex._lessons.store import COLLECTION, LessonStore, lesson_scope, stored_rep

__all__ = [
    "Attempt",
    "StepLessonMemory",
    "SyncStepLessonMemory",
    "rank_lessons",
]

_log = logging.getLogger("episodex.lessons")


@dataclass(frozen=True, slots=True)
class Attempt:
    """The attempt in progress.

    Attributes:
        user_id: The end user.
        agent_id: The agent.
        session_id: The task being retried.
        run_id: This attempt's id.
        rep: This attempt's number, from 1; rep 1 gets no lessons.
        task: The task, as given to the grader.
        resumed: True when earlier attempts (or this run) were already stored.
    """

    user_id: str
    agent_id: str
    session_id: str
    run_id: str
    rep: int
    task: str | None
    resumed: bool


#: Attempts kept in memory per `StepLessonMemory` (the oldest are forgotten; stored steps stay).
_KEPT_ATTEMPTS = 1024


#: What identifies an attempt in progress: its user, agent, session and run. Callers choose run
#: ids, and a short one (`"1"`) repeats across sessions and users: keyed by it alone, a second
#: attempt replaced the first, whose next steps then went to the other session.
_AttemptKey = tuple[str, str, str, str]


class _Start:
    """One `init_episode`, shared by its task and the tasks created from that one since.

    Tasks created from the starting task inherit its context, and with it its attempt in
    progress; when the starting task ends the attempt, it is ended in all of them too (a
    worker begun during a request showed its lessons to, and took the steps of, whatever
    that worker did next). A task created from it that ends the attempt ends it there only.
    """

    __slots__ = ("_task", "ended")

    def __init__(self) -> None:
        task = _running_task()
        self._task = None if task is None else weakref.ref(task)
        self.ended = False

    def by_starter(self) -> bool:
        """Whether the current task is the one that made this start."""
        task = _running_task()
        return task is not None and self._task is not None and self._task() is task


def _running_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running event loop
        return None


@dataclass(frozen=True, slots=True)
class _Own:
    """The attempt a task (or thread) started, and whether that task has ended it since."""

    key: _AttemptKey
    start: _Start
    ended_here: bool = False

    @property
    def ended(self) -> bool:
        """Ended in this task, or by the task that started it (see `_Start`)."""
        return self.ended_here or self.start.ended


def _key(attempt: Attempt) -> _AttemptKey:
    return (attempt.user_id, attempt.agent_id, attempt.session_id, attempt.run_id)


def _swap(steps: dict[str, StepMemory], old: list[StepMemory], new: list[StepMemory]) -> None:
    """Put each of `new` in place of the matching `old`, where `old` is still the step held."""
    for before, after in zip(old, new, strict=True):
        if steps.get(before.step_id) is before:
            steps[before.step_id] = after


def _last_step(steps: Mapping[str, StepMemory]) -> StepMemory | None:
    return max(steps.values(), key=lambda m: m.step_num, default=None)


class StepLessonMemory:
    """Step lessons: graded steps of earlier attempts at a task, retrieved for the current state.

    Setup:
        Nothing beyond `pip install episodex`; the lessons live in the same engine as the
        episodes, in their own collection (`step_lessons`).

    Instantiate:
        ```python
        from episodex import EpisodicMemory, ProgrammaticGrader, StepLessonMemory

        memory = EpisodicMemory(path="./memory")
        grader = ProgrammaticGrader(expected_actions=["click('12')", "click('30')"])
        lessons = StepLessonMemory.from_memory(memory, grader=grader)
        ```

    Use (async), once per attempt: start it, read the lessons, record each step, end it.
        ```python
        page = {"url": "https://app.example/tickets/7",
                "elements": ["[12] button 'Priority'", "[13] button 'Delete'"]}
        goal = "Set ticket 7 to High priority"
        await lessons.init_episode("ticket-7", user_id="u1", agent_id="web", task=goal)
        await lessons.lessons_block(page, goal)  # "" on the first attempt
        await lessons.record_step_start(env_pre=page, internal_state=goal, action="click('13')",
                                        action_element_text="Delete")
        result = await lessons.end_episode(final_env={"url": "https://app.example/tickets"})

        await lessons.init_episode("ticket-7", user_id="u1", agent_id="web", task=goal)
        print(await lessons.lessons_block(page, goal))  # -> 1. AVOID: [/tickets/7
        memory.close()
        ```

    Without a grader, steps are stored as `pending` and never become lessons: `end_episode`
    logs a warning and returns None. `SyncStepLessonMemory` has the same methods, no `await`.

    Args:
        engine: The vector engine (share the episodic memory's: `from_memory`).
        embedder: The dense embedder of internal states; None for the bundled model.
        grader: Grades each attempt's steps at `end_episode`; None means no lessons.
        collection: Collection name.
        env_threshold: Default minimum Jaccard overlap of page elements.
        top_k: Default number of candidates kept after the page match.
        env_weight: Default weight of the page match in the re-rank.
        state_weight: Default weight of the internal-state cosine in the re-rank.
        final_k: Default number of lessons returned.
    """

    def __init__(
        self,
        engine: Engine,
        embedder: Embedder | str | None = None,
        *,
        grader: Grader | None = None,
        collection: str = COLLECTION,
        env_threshold: float = 0.7,
        top_k: int = 10,
        env_weight: float = 0.65,
        state_weight: float = 0.35,
        final_k: int = 2,
    ) -> None:
        if not isinstance(engine, Engine):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"engine must be an episodex Engine, got {type(engine).__name__}"
            )
        if grader is not None and not isinstance(grader, Grader):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"grader must have an async grade(steps, *, task) method, got {grader!r}"
            )
        self.engine = engine
        self.embedder = resolve_embedder(embedder)
        self.grader = grader
        self.defaults: dict[str, Any] = {
            "env_threshold": check_unit("env_threshold", env_threshold),
            "top_k": require_int("top_k", top_k, minimum=1),
            "env_weight": require_weight("env_weight", env_weight),
            "state_weight": require_weight("state_weight", state_weight),
            "final_k": require_int("final_k", final_k, minimum=0),
        }
        self._store = LessonStore(engine, self.embedder, collection)
        # Attempts in progress, by user, agent, session and run; which one a call means is per
        # asyncio task (or per thread, through the sync twin): one shared instance never mixes
        # two users' attempts.
        self._attempts: OrderedDict[_AttemptKey, tuple[Attempt, dict[str, StepMemory]]] = (
            OrderedDict()
        )
        self._current: contextvars.ContextVar[_Own | None] = contextvars.ContextVar(
            f"episodex_lessons_attempt_{id(self)}", default=None
        )

    @classmethod
    def from_memory(cls, memory: EngineHost[Engine, Embedder], **options: Any) -> StepLessonMemory:
        """Lessons in the same store as an `EpisodicMemory` (its engine and embedder)."""
        return cls(memory.engine, memory.embedder, **options)

    @property
    def lessons_enabled(self) -> bool:
        """True when a grader is set: without one, steps are stored but never become lessons."""
        return self.grader is not None

    @property
    def episode(self) -> Attempt | None:
        """The attempt in progress in this task (or thread), or the one it ended last.

        None before `init_episode`. An ended attempt is here to be read back (its steps, their
        grades); lessons for a new state and new steps need the next `init_episode`.
        """
        own = self._own()
        return None if own is None else self._attempts[own.key][0]

    @property
    def steps(self) -> list[StepMemory]:
        """The steps of the attempt in progress (or of the one this task ended last), in order."""
        own = self._own()
        steps = {} if own is None else self._attempts[own.key][1]
        return sorted(steps.values(), key=lambda m: m.step_num)

    def _own(self) -> _Own | None:
        # Only the attempt this task (or thread) started: a call from elsewhere passes its
        # Attempt. Falling back to "the only open attempt" gave a request that skipped
        # init_episode the attempt, and the lessons, of whichever user had one open.
        own = self._current.get()
        return own if own is not None and own.key in self._attempts else None

    def _require_episode(self, attempt: Attempt | None = None, *, ended: bool = False) -> Attempt:
        """The attempt a call means: `attempt`, else the one this task started.

        With `ended`, also the one this task ended: a call that only reads, stores or grades
        what that attempt recorded. Without it, an ended attempt is refused: a server reuses
        its threads (a worker its task) for any user's requests, and a later request that
        skipped `init_episode` got the ended attempt's lessons and put its steps there.
        """
        if attempt is not None:
            if not isinstance(attempt, Attempt):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValidationError(f"attempt must be an Attempt, got {type(attempt).__name__}")
            if _key(attempt) not in self._attempts:
                raise ValidationError(
                    f"attempt {attempt.run_id!r} of session {attempt.session_id!r} is not in "
                    "progress here; resume it with "
                    "init_episode(session_id, user_id=..., agent_id=..., run_id=...)"
                )
            return self._attempts[_key(attempt)][0]
        own = self._own()
        if own is not None and own.ended and not ended:
            raise ValidationError(
                "no episode in progress in this task: the attempt it started has ended "
                "(end_episode); call init_episode(session_id, user_id=..., agent_id=...) for the "
                "next one, or pass the Attempt it returned as attempt="
            )
        if own is None:
            raise ValidationError(
                "no episode in progress in this task: call init_episode(session_id, "
                "user_id=..., agent_id=...) first, or pass the Attempt it returned as attempt="
                if len(self._attempts) <= 1
                else "several attempts are in progress on this memory and none was started in "
                "this task: pass the Attempt that init_episode returned as attempt="
            )
        return self._attempts[own.key][0]

    def _steps_of(self, episode: Attempt) -> dict[str, StepMemory]:
        return self._attempts[_key(episode)][1]

    # -- lifecycle -----------------------------------------------------------------------

    async def init_episode(
        self,
        session_id: str,
        *,
        user_id: str,
        agent_id: str,
        task: str | None = None,
        run_id: str | None = None,
    ) -> Attempt:
        """Start the next attempt of a session, or resume one.

        A new session starts at rep 1; an existing one continues at its last rep + 1. Given
        the `run_id` of a stored attempt, that attempt is resumed: its steps are loaded and
        new steps continue its numbering. An attempt still in progress on this memory (another
        task's) is taken up as it is: its rep, its task unless `task` is given, and the steps
        it recorded and has not stored yet.

        The task's (or thread's) attempt until now is no longer its own from the start of the
        call, so one that fails (`ValidationError`, `EngineError`) leaves none in progress.
        """
        # A server reuses its threads (and a worker its task) for any user's requests: when
        # this start failed and the caller went on without memory, the attempt its previous
        # request started, another user's perhaps, gave this request its lessons and took
        # its steps.
        self._current.set(None)
        scope = lesson_scope(user_id, agent_id, session_id)
        if task is not None and not isinstance(task, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"task must be a string, got {task!r}")
        if run_id is not None:
            require_id("run_id", run_id)
        rows = await asyncio.to_thread(self._store.scan, scope, ("rep", "run_id"))
        # A step stored with no readable rep (another program, an older release) is left out.
        reps = {pid: stored_rep(pid, p) for pid, p in rows}
        own: list[StepMemory] = []
        if run_id is not None and any(p.get("run_id") == run_id for _, p in rows):
            own = await asyncio.to_thread(self._store.load, scope.and_(Match("run_id", run_id)))
            # The run's steps may all be unreadable: its rep is then the one its rows hold.
            run_reps = [reps[pid] for pid, p in rows if p.get("run_id") == run_id]
            rep = own[0].rep if own else min((r for r in run_reps if r is not None), default=0)
        else:
            rep = 0
        if rep == 0:
            rep = max((r for r in reps.values() if r is not None), default=0) + 1
        steps = {m.step_id: m for m in own}
        key: _AttemptKey = (user_id, agent_id, session_id, run_id or "")
        if run_id is not None and key in self._attempts:
            # In progress here: replaced by what is stored, its steps recorded since the last
            # `persist_memories` would be lost (and an attempt that stored nothing restarted).
            running, recorded = self._attempts[key]
            rep, task = running.rep, task if task is not None else running.task
            steps.update(recorded)
        attempt = Attempt(
            user_id=user_id,
            agent_id=agent_id,
            session_id=session_id,
            run_id=run_id or str(uuid.uuid4()),
            rep=rep,
            task=task,
            resumed=bool(rows),
        )
        self._attempts[_key(attempt)] = (attempt, steps)
        self._attempts.move_to_end(_key(attempt))
        while len(self._attempts) > _KEPT_ATTEMPTS:
            self._attempts.popitem(last=False)
        self._current.set(_Own(_key(attempt), _Start()))
        return attempt

    async def record_step_start(
        self,
        *,
        env_pre: EnvState | Mapping[str, Any],
        internal_state: str,
        action: str,
        action_element_text: str | None = None,
        think: str | None = None,
        step_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        attempt: Attempt | None = None,
    ) -> StepMemory:
        """Record an action the agent is taking, with the state it saw and its reasoning.

        The previous step's `env_post` becomes this step's `env_pre` when it was not set.
        The step is pending and kept in memory until `persist_memories`.
        """
        episode = self._require_episode(attempt)
        steps = self._steps_of(episode)
        env = EnvState.parse(env_pre, where="env_pre: ")
        if step_id is not None:
            # Checked before it is looked up: an unhashable one would fail the lookup untyped.
            require_id("step_id", step_id)
        step_num = max((m.step_num for m in steps.values()), default=0) + 1
        step_id = f"rep{episode.rep}-step{step_num}" if step_id is None else step_id
        if step_id in steps:
            raise ValidationError(
                f"step_id {step_id!r} is already used in this attempt; give each step its own id"
            )
        memory = StepMemory.parse(
            {
                "step_id": step_id,
                "user_id": episode.user_id,
                "agent_id": episode.agent_id,
                "session_id": episode.session_id,
                "run_id": episode.run_id,
                "rep": episode.rep,
                "step_num": step_num,
                "env_pre": env,
                "internal_state": internal_state,
                "think": think,
                "action": action,
                "action_element_text": action_element_text,
                "metadata": {} if metadata is None else metadata,
            }
        )
        previous = _last_step(steps)
        if previous is not None and previous.env_post is None:
            steps[previous.step_id] = previous.replace(env_post=env)
        steps[step_id] = memory
        return memory

    async def record_step_end(
        self,
        env_post: EnvState | Mapping[str, Any],
        *,
        step_id: str | None = None,
        attempt: Attempt | None = None,
    ) -> StepMemory:
        """Record the state after a step (the last one unless `step_id` is given)."""
        steps = self._steps_of(self._require_episode(attempt))
        env = EnvState.parse(env_post, where="env_post: ")
        if step_id is not None:
            require_id("step_id", step_id)
        step = steps.get(step_id) if step_id is not None else _last_step(steps)
        if step is None:
            raise ValidationError(
                f"no step {step_id!r} in this attempt"
                if step_id is not None
                else "no step recorded yet"
            )
        updated = step.replace(env_post=env)
        steps[step.step_id] = updated
        return updated

    async def persist_memories(
        self,
        *,
        final_env: EnvState | Mapping[str, Any] | None = None,
        attempt: Attempt | None = None,
    ) -> list[str]:
        """Store the attempt's steps (embedding their internal states); returns their ids.

        `final_env` is the state after the last step, if not recorded yet. Storing again
        replaces the stored copies.
        """
        episode = self._require_episode(attempt, ended=True)
        steps = self._steps_of(episode)
        last = _last_step(steps)
        if final_env is not None and last is not None and last.env_post is None:
            await self.record_step_end(final_env, attempt=episode)
        snapshot = sorted(steps.values(), key=lambda m: m.step_num)
        stored = await in_thread(self._store.write, snapshot)
        for memory in stored:
            if steps.get(memory.step_id) is not None and steps[memory.step_id].id == memory.id:
                steps[memory.step_id] = memory
        return [m.id for m in stored]

    async def add_grades(
        self,
        grading_result: GradingResult | Mapping[str, Any],
        *,
        run_id: str | None = None,
        attempt: Attempt | None = None,
    ) -> list[StepMemory]:
        """Apply a grading result to an attempt's steps and store them; returns the steps.

        Graded steps become `success` or `failure` with the grader's explanation, correction
        and confidence; every step gets the task-level `task_incomplete`. Steps left out stay
        pending. Grades for unknown steps raise `ValidationError` and change nothing.

        Args:
            grading_result: The grades.
            run_id: The attempt to grade (default: the one in progress). One in progress on
                this memory is graded in its own copy, the steps it has not stored too.
            attempt: The attempt in progress (default: the one this task started).
        """
        episode = self._require_episode(attempt, ended=True)
        result = GradingResult.parse(grading_result, where="grading_result: ")
        if run_id is not None:
            require_id("run_id", run_id)
        key: _AttemptKey = (
            episode.user_id,
            episode.agent_id,
            episode.session_id,
            episode.run_id if run_id is None else run_id,
        )
        # An attempt in progress here (this one, or another task's) is graded in its own copy:
        # graded only in the store, its next `persist_memories` stored its pending copy back.
        held = self._attempts[key][1] if key in self._attempts else None
        if held is not None:
            steps = sorted(held.values(), key=lambda m: m.step_num)
        else:
            scope = lesson_scope(episode.user_id, episode.agent_id, episode.session_id)
            steps = await asyncio.to_thread(self._store.load, scope.and_(Match("run_id", key[3])))
            if not steps:
                raise ValidationError(
                    f"no stored attempt {run_id!r} in session {episode.session_id!r}"
                )
        by_id = {m.step_id: m for m in steps}
        unknown = [g.step_id for g in result.grades if g.step_id not in by_id]
        if unknown:
            raise ValidationError(
                f"grades for steps that are not in this attempt: {unknown}; known steps: {sorted(by_id)}"
            )
        grades = {g.step_id: g for g in result.grades}
        updated: list[StepMemory] = []
        for memory in steps:
            changes: dict[str, Any] = {
                "task_incomplete": None if result.task_success else result.task_incomplete
            }
            grade = grades.get(memory.step_id)
            if grade is not None:
                changes.update(
                    outcome="success" if grade.correct else "failure",
                    outcome_reason=grade.explanation,
                    correction=None if grade.correct else grade.correction,
                    confidence=grade.confidence,
                )
            updated.append(memory.replace(**changes))
        if held is None:
            return await in_thread(self._store.write, updated)
        # The copy takes the grades before the write, step by step (a step recorded meanwhile
        # stays): a caller cancelled during the write leaves it to finish, and a copy still
        # pending would then be stored over the grades by the next `persist_memories`.
        _swap(held, steps, updated)
        try:
            stored = await in_thread(self._store.write, updated)
        except asyncio.CancelledError:
            raise
        except BaseException:
            _swap(held, updated, steps)  # not stored: the copy is as it was
            raise
        _swap(held, updated, stored)
        return stored

    async def grade_episode(
        self, grader: Grader | None = None, *, attempt: Attempt | None = None
    ) -> GradingResult | None:
        """Grade the attempt in progress with `grader` (or the memory's) and store the grades.

        Returns None, and logs a warning, when there is no grader: the steps stay pending and
        will never be lessons.
        """
        episode = self._require_episode(attempt, ended=True)
        steps = sorted(self._steps_of(episode).values(), key=lambda m: m.step_num)
        grader = grader if grader is not None else self.grader
        if grader is None:
            _log.warning(
                "no grader: the %d step(s) of session %r rep %d are stored as pending and will "
                "never become lessons; pass grader= to StepLessonMemory or end_episode",
                len(steps),
                episode.session_id,
                episode.rep,
            )
            return None
        raw = await grader.grade(steps, task=episode.task)
        result = GradingResult.parse(raw, where=f"{type(grader).__name__} returned ")
        await self.add_grades(result, attempt=episode)
        return result

    async def end_episode(
        self,
        *,
        final_env: EnvState | Mapping[str, Any] | None = None,
        grader: Grader | None = None,
        attempt: Attempt | None = None,
    ) -> GradingResult | None:
        """Store the attempt's steps, then grade them (see `grade_episode`).

        From the start of the call, the attempt is no longer in progress in this task (or
        thread), nor, when this task started it, in the tasks created from this one since:
        its steps and grades can be read back and stored again, but lessons for a new state
        and new steps need the next `init_episode` (or the attempt as `attempt=`).
        """
        episode = self._require_episode(attempt, ended=True)
        own = self._own()
        if own is not None and own.key == _key(episode):
            # Until the next init_episode here, a server thread (or a worker's task) reused
            # for another user's request showed it this attempt's lessons and took its steps.
            if own.start.by_starter():
                own.start.ended = True
            self._current.set(_Own(own.key, own.start, ended_here=True))
        await self.persist_memories(final_env=final_env, attempt=episode)
        return await self.grade_episode(grader, attempt=episode)

    # -- retrieval -----------------------------------------------------------------------

    async def retrieve_memories(
        self,
        current_env: EnvState | Mapping[str, Any],
        current_state: str,
        *,
        attempt: Attempt | None = None,
        **options: Unpack[LessonOptions],
    ) -> list[RetrievedLesson]:
        """The lessons of earlier attempts for the current page and internal state, best first.

        Rep 1 gets none (the baseline). From rep 2, the graded steps of earlier reps of this
        session (never the current run) are ranked by `rank_lessons`; options left out (or
        None) take the memory's defaults.
        """
        unknown = sorted(set(options) - LessonOptions.__optional_keys__)
        if unknown:
            raise TypeError(
                f"retrieve_memories() got unexpected keyword argument(s) {unknown}; its options "
                f"are {sorted(LessonOptions.__optional_keys__)}"
            )
        episode = self._require_episode(attempt)
        env = EnvState.parse(current_env, where="current_env: ")
        if not isinstance(current_state, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"current_state must be a string, got {type(current_state).__name__}"
            )
        require_encodable("current_state", current_state)
        given = {k: v for k, v in options.items() if v is not None}
        o = {**self.defaults, **given}
        threshold = check_unit("env_threshold", o["env_threshold"])
        keep = require_int("top_k", o["top_k"], minimum=1)
        w_env = require_weight("env_weight", o["env_weight"])
        w_state = require_weight("state_weight", o["state_weight"])
        final = require_int("final_k", o["final_k"], minimum=0)
        if episode.rep <= 1:
            return []
        flt = (
            lesson_scope(episode.user_id, episode.agent_id, episode.session_id)
            .and_(MatchAny("outcome", ("success", "failure")), Range("rep", lt=episode.rep))
            .and_not(Match("run_id", episode.run_id))
        )
        candidates = await asyncio.to_thread(self._store.load, flt)
        if not candidates:
            return []
        vectors = await asyncio.to_thread(self._store.embed, [current_state or " "])
        return rank_lessons(
            candidates,
            env,
            vectors[0],
            env_threshold=threshold,
            top_k=keep,
            env_weight=w_env,
            state_weight=w_state,
            final_k=final,
        )

    async def lessons_block(
        self,
        current_env: EnvState | Mapping[str, Any],
        current_state: str,
        *,
        attempt: Attempt | None = None,
        **options: Unpack[LessonOptions],
    ) -> str:
        """The REPEAT/AVOID prompt block for the current state (`""` when there is none)."""
        return format_lessons(
            await self.retrieve_memories(current_env, current_state, attempt=attempt, **options)
        )

    async def load_all_memories_for_session(
        self,
        session_id: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[StepMemory]:
        """Every stored step of a session (defaults: the episode in progress).

        In order of rep, then run by run (in the order the runs began), then step. A stored
        step that cannot be read back (written by another program or an older release) raises
        `EngineError` naming its point id: this read feeds `export_memories` and a move to
        another embedder, which must not lose a step without a word. The lesson reads
        (`retrieve_memories`, `lessons_block`, resuming an attempt) leave such a step out and
        log it once instead.
        """
        episode = self.episode
        user_id = user_id if user_id is not None else (episode.user_id if episode else None)
        agent_id = agent_id if agent_id is not None else (episode.agent_id if episode else None)
        session_id = (
            session_id if session_id is not None else (episode.session_id if episode else None)
        )
        return await asyncio.to_thread(
            self._store.load_every, lesson_scope(user_id, agent_id, session_id)
        )

    async def store_memories(self, memories: Iterable[StepMemory | Mapping[str, Any]]) -> list[str]:
        """Store step memories as they are (an import); missing embeddings are computed."""
        if isinstance(memories, Mapping | str | bytes):
            raise ValidationError("store_memories takes a list of step memories, not a single one")
        if not isinstance(memories, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"store_memories takes a list of step memories, got {type(memories).__name__}"
            )
        # A step memory instance too: a copy (`model_copy`) may hold an id of another spelling.
        parsed = [
            parse_to_write(StepMemory, m, where=f"memory {i}: ") for i, m in enumerate(memories)
        ]
        stored = await in_thread(self._store.write, parsed)
        return [m.id for m in stored]

    async def forget_session(self, session_id: str, *, user_id: str, agent_id: str) -> int:
        """Delete every stored step of one session of this user and agent; returns how many.

        Its attempts in progress here are let go first: a later `persist_memories` or
        `end_episode` of one would have stored the forgotten steps again. Calls on such an
        attempt then raise `ValidationError`; the session starts again with `init_episode`.
        If the delete fails, they are kept, as are the stored steps.
        """
        flt = lesson_scope(user_id, agent_id, session_id)
        session = (user_id, agent_id, session_id)
        taken = {key: held for key, held in self._attempts.items() if key[:3] == session}
        for key in taken:
            del self._attempts[key]
        try:
            return await in_thread(self._store.delete, flt)
        except BaseException:
            self._attempts.update(taken)
            raise

    async def count(self, session_id: str, *, user_id: str, agent_id: str) -> int:
        """Number of stored steps of one session of this user and agent."""
        return await asyncio.to_thread(
            self._store.count, lesson_scope(user_id, agent_id, session_id)
        )


class SyncStepLessonMemory(SyncTwin):
    """The synchronous twin of `StepLessonMemory`: same methods, no `await`.

    ```python
    from episodex import EpisodicMemory, StepLessonMemory, SyncStepLessonMemory

    memory = EpisodicMemory(location=":memory:")
    lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(memory))
    lessons.init_episode("ticket-7", user_id="u1", agent_id="web")
    lessons.lessons_block({"url": "/tickets/7"}, "Set ticket 7 to High")  # "" on rep 1
    lessons.close()
    memory.close()
    ```
    """

    def __init__(self, lessons: StepLessonMemory) -> None:
        self.lessons = lessons
        super().__init__(lessons)

    # Every coroutine method of StepLessonMemory, blocking (tests/core/test_sync_twins.py).
    init_episode = blocking(StepLessonMemory.init_episode)
    record_step_start = blocking(StepLessonMemory.record_step_start)
    record_step_end = blocking(StepLessonMemory.record_step_end)
    persist_memories = blocking(StepLessonMemory.persist_memories)
    add_grades = blocking(StepLessonMemory.add_grades)
    grade_episode = blocking(StepLessonMemory.grade_episode)
    end_episode = blocking(StepLessonMemory.end_episode)
    retrieve_memories = blocking(StepLessonMemory.retrieve_memories)
    lessons_block = blocking(StepLessonMemory.lessons_block)
    load_all_memories_for_session = blocking(StepLessonMemory.load_all_memories_for_session)
    store_memories = blocking(StepLessonMemory.store_memories)
    forget_session = blocking(StepLessonMemory.forget_session)
    count = blocking(StepLessonMemory.count)

    engine = forward[Engine]("lessons", "The vector engine.")
    embedder = forward[Embedder]("lessons", "The dense embedder of internal states.")
    grader = forward[Grader | None]("lessons", "The grader of each attempt; None: no lessons.")
    defaults = forward[dict[str, Any]]("lessons", "The default retrieval options.")
    lessons_enabled = forward[bool]("lessons", "True when a grader is set.")

    @property
    def episode(self) -> Attempt | None:
        """The attempt this thread has in progress, or None."""
        return self.in_thread_context(lambda: self.lessons.episode)

    @property
    def steps(self) -> list[StepMemory]:
        """The steps of the attempt this thread has in progress."""
        return self.in_thread_context(lambda: self.lessons.steps)

    def close(self) -> None:
        """Stop the private event loop (the engine belongs to whoever opened it)."""
        super().close()
