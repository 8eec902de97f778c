"""Step lessons as data: the page an agent saw, each step it took, and the grades of its steps.

A `StepMemory` is one action an agent took in an environment (a web page, a tool loop): the
state before it, the agent's reasoning, the action, the state after, and, once graded, whether
it was right. `StepGrade` and `GradingResult` are what a grader returns; `RetrievedLesson` is a
graded step found again for the current state, with the scores that found it.
"""

from __future__ import annotations

import ast
import math
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from episodex._common.errors import ValidationError
from episodex._common.model import (
    FrozenModel,
    Id,
    JsonObject,
    NonBlankId,
    NonBlankText,
    UtcDatetime,
    UuidStr,
)
from episodex._common.validation import is_finite

__all__ = [
    "ActionParts",
    "EnvState",
    "GradingResult",
    "LessonKind",
    "Outcome",
    "RetrievedLesson",
    "StepGrade",
    "StepMemory",
    "action_parts",
    "element_set",
]

#: Bumped when the stored payload of a step memory changes shape.
LESSONS_SCHEMA_VERSION = 1

Outcome = Literal["pending", "success", "failure"]
LessonKind = Literal["REPEAT", "AVOID"]

Count = Annotated[StrictInt, Field(ge=1)]
Unit = Annotated[StrictFloat | StrictInt, Field(ge=0.0, le=1.0)]


def _blank_to_none(value: str | None) -> str | None:
    # An empty optional text means "absent": one spelling, so csv and json round-trip alike.
    if value is None or not value.strip():
        return None
    return value


#: A url's scheme and host (`http://[::1`), taken off when urllib cannot split the url.
_AUTHORITY = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/]*")


def _normalise_element(text: str) -> str:
    return " ".join(text.split()).casefold()


class EnvState(FrozenModel):
    """What the agent saw: the page (url and title) and its visible elements.

    Elements are short strings, one per interactive element, as the agent's observation shows
    them, e.g. `[42] button 'Delete'`. Two states are compared by the overlap of their
    elements (case and spacing ignored).
    """

    record_name = "environment state"

    url: StrictStr = ""
    """The page address; its path is shown in lessons (`/tickets`)."""
    page: StrictStr | None = None
    """A page name or title, used when there is no url."""
    elements: list[StrictStr] = Field(default_factory=list[str])
    """The visible elements, one string each."""
    extra: JsonObject = Field(default_factory=dict[str, Any])
    """Anything else about the state (a JSON object), kept verbatim."""

    @field_validator("page")
    @classmethod
    def _page(cls, value: str | None) -> str | None:
        return _blank_to_none(value)

    @property
    def path(self) -> str:
        """The page path of `url` (`/tickets`), else `page`, else `/`."""
        if self.url:
            try:
                parts = urlsplit(self.url)
            except ValueError:
                # A host urllib cannot read (`http://[::1/x`): any text is a url here, and
                # this path is in every lesson line, so one such step cost a session its
                # lessons. Its path is what follows the host, as for plain text.
                plain = self.url.split("?", 1)[0].split("#", 1)[0]
                return _AUTHORITY.sub("", plain, count=1) or "/"
            if parts.scheme or parts.netloc:
                return parts.path or "/"
            return self.url.split("?", 1)[0].split("#", 1)[0] or "/"
        return self.page or "/"


def element_set(env: EnvState) -> frozenset[str]:
    """The elements of a state as a set, case and spacing normalised, blanks dropped."""
    return frozenset(n for n in (_normalise_element(e) for e in env.elements) if n)


class StepMemory(FrozenModel):
    """One step of an agent in an environment, pending until graded.

    Fields left empty (`""`) in the optional texts are stored as absent (`None`).
    """

    record_name = "step memory"

    id: UuidStr = Field(default_factory=lambda: str(uuid.uuid4()))
    """The stored point id (a UUID)."""
    step_id: Id
    """The step's id within its session; grades refer to it."""
    user_id: NonBlankId
    """The end user; lessons never cross users."""
    agent_id: NonBlankId
    """The agent; lessons never cross agents."""
    session_id: NonBlankId
    """The task being retried; lessons never cross sessions."""
    run_id: NonBlankId
    """One attempt (rep) at the task; retrieval never returns the current run."""
    rep: Count
    """Which attempt this was, from 1."""
    step_num: Count
    """The step's position in its run, from 1."""
    env_pre: EnvState
    """The state before the action."""
    internal_state: NonBlankText
    """The agent's reasoning context (goal, plan, what it knows); compared by embedding."""
    think: StrictStr | None = None
    """The agent's chain of thought for this step."""
    internal_state_embedding: list[StrictFloat] | None = None
    """The embedder's vector of `internal_state`, filled when the step is stored."""
    action: NonBlankText
    """The action taken, e.g. `click('42')`."""
    action_element_text: StrictStr | None = None
    """What the action's target is, e.g. `Priority dropdown`."""
    env_post: EnvState | None = None
    """The state after the action."""
    outcome: Outcome = "pending"
    """`pending` until graded, then `success` or `failure`."""
    outcome_reason: StrictStr | None = None
    """Why the step was right or wrong."""
    correction: StrictStr | None = None
    """What should have been done instead."""
    confidence: Unit | None = None
    """The grader's confidence in its grade, in [0, 1]."""
    task_incomplete: StrictStr | None = None
    """Why the whole task failed, on every step of a failed run."""
    created_at: UtcDatetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the step was recorded (naive times are taken as UTC)."""
    metadata: JsonObject = Field(default_factory=dict[str, Any])
    """Any JSON object, kept verbatim."""
    embedding_model: StrictStr | None = None
    """The id of the model that made `internal_state_embedding`, set when a store embeds it.

    A step imported into a store with another model is embedded again: a vector of the same
    length from another model would be compared with this store's queries all the same. An
    empty (or blank) id names no model and is absent (None), as a csv export writes it."""

    @field_validator(
        "think",
        "action_element_text",
        "outcome_reason",
        "correction",
        "task_incomplete",
        "embedding_model",
    )
    @classmethod
    def _optional_text(cls, value: str | None) -> str | None:
        return _blank_to_none(value)

    @field_validator("internal_state_embedding")
    @classmethod
    def _finite(cls, value: list[float] | None) -> list[float] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("must not be empty; leave it None until the step is embedded")
        if not all(math.isfinite(v) for v in value):
            raise ValueError("must contain only finite numbers")
        return value

    @property
    def graded(self) -> bool:
        """True once the step is a `success` or a `failure`."""
        return self.outcome != "pending"

    @property
    def kind(self) -> LessonKind | None:
        """`REPEAT` for a success, `AVOID` for a failure, None while pending."""
        return {"success": "REPEAT", "failure": "AVOID"}.get(self.outcome)  # type: ignore[return-value]


class StepGrade(FrozenModel):
    """A grader's verdict on one step."""

    record_name = "step grade"

    step_id: Id
    """The graded step."""
    correct: StrictBool
    """Whether the step was right (a REPEAT lesson) or wrong (an AVOID lesson)."""
    explanation: StrictStr | None = None
    """Why; shown as "This worked:" or "This failed:"."""
    correction: StrictStr | None = None
    """What to do instead (wrong steps); shown as "Do this instead:"."""
    confidence: Unit = 1.0
    """How sure the grader is, in [0, 1]."""

    @field_validator("explanation", "correction")
    @classmethod
    def _optional_text(cls, value: str | None) -> str | None:
        return _blank_to_none(value)


class GradingResult(FrozenModel):
    """The grades of one run: one per graded step, and the verdict on the whole task."""

    record_name = "grading result"

    grades: list[StepGrade] = Field(default_factory=list[StepGrade])
    """Per-step grades; steps left out stay pending and never become lessons."""
    task_success: StrictBool
    """Whether the run achieved the task."""
    task_incomplete: StrictStr | None = None
    """Why the task failed (only when `task_success` is false); stored on every step."""

    @field_validator("task_incomplete")
    @classmethod
    def _optional_text(cls, value: str | None) -> str | None:
        return _blank_to_none(value)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        seen: set[str] = set()
        for grade in self.grades:
            if grade.step_id in seen:
                raise ValueError(f"step {grade.step_id!r} is graded twice")
            seen.add(grade.step_id)
        if self.task_success and self.task_incomplete is not None:
            raise ValueError(
                "task_incomplete says why a task failed; leave it empty when task_success is true"
            )
        return self


@dataclass(frozen=True, slots=True)
class RetrievedLesson:
    """A graded step of an earlier attempt, found again for the current state.

    Attributes:
        memory: The stored step.
        env_score: Jaccard overlap of its page elements with the current page's, in [0, 1].
        state_score: Cosine similarity of its internal state with the current one.
        score: The re-ranking score, `env_weight * env_score + state_weight * state_score`.
    """

    memory: StepMemory
    env_score: float
    state_score: float
    score: float

    def __post_init__(self) -> None:
        # Checked as every model is: a NaN score ranked anywhere and read "nan%" in the block.
        if not isinstance(self.memory, StepMemory):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"memory must be a StepMemory, got {type(self.memory).__name__}")
        for name, low, high in (
            ("env_score", 0.0, 1.0),
            ("state_score", -1.0, 1.0),
            ("score", -math.inf, math.inf),
        ):
            value: object = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not is_finite(value)
                or not low <= value <= high
            ):
                span = "a finite number" if name == "score" else f"a number in [{low:g}, {high:g}]"
                raise ValidationError(f"{name} must be {span}, got {value!r:.60}")
            object.__setattr__(self, name, float(value))

    @property
    def kind(self) -> LessonKind:
        """`REPEAT` (the step worked) or `AVOID` (it failed)."""
        return "REPEAT" if self.memory.outcome == "success" else "AVOID"


@dataclass(frozen=True, slots=True)
class ActionParts:
    """An action string split into its verb and arguments: `fill('12', 'High')`."""

    verb: str
    args: tuple[str, ...]

    @property
    def target(self) -> str | None:
        """The first argument (an element id for web actions)."""
        return self.args[0] if self.args else None

    @property
    def value(self) -> str | None:
        """The remaining arguments (a typed text, a chosen option), joined by `, `."""
        return ", ".join(self.args[1:]) if len(self.args) > 1 else None


_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*$", re.DOTALL)


def action_parts(action: str) -> ActionParts:
    """Split `click('42')` into verb `click` and args `('42',)`; anything else is one verb.

    Arguments are read as Python literals when they are literals (never evaluated otherwise).
    """
    match = _CALL.match(action)
    if match is None:
        return ActionParts(action.strip(), ())
    verb, inner = match.group(1), match.group(2).strip()
    if not inner:
        return ActionParts(verb, ())
    try:
        value = ast.literal_eval(f"({inner},)")
        args = tuple(str(v) for v in value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        args = tuple(a.strip().strip("'\"") for a in inner.split(","))
    return ActionParts(verb, args)
