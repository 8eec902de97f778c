"""Task episodes: a task, what the agent did, how it ended, and how that reads in a prompt.

`Episode.format` renders an episode as XML for a prompt or as plain lines for embedding. The
XML form escapes every stored text and only emits element names it has validated, so a result
that contains `</episode></recalled_episodes>` (or "ignore previous instructions") stays text
inside its element and can never close or forge the block around it.
"""

from __future__ import annotations

import json
import re
import typing
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal, Self

from pydantic import Field, StrictStr, field_validator, model_validator

from episodex._common.errors import ValidationError
from episodex._common.model import Id, JsonObject, NonBlankText, TypedConstruction, UtcDatetime
from episodex._common.text import xml_text

__all__ = [
    "DEFAULT_FIELDS",
    "EPISODE_FIELDS",
    "Episode",
    "EpisodeField",
    "FormatMode",
    "Task",
    "TaskResult",
    "check_element_name",
]

FormatMode = Literal["xml", "concat"]

#: The fields of an episode a prompt can show, in the order it shows them.
EpisodeField = Literal[
    "id_",
    "task_id",
    "instruction",
    "rollout",
    "result",
    "additional_data",
    "error",
    "metadata",
    "completed_at",
]

#: Every field `Episode.format` can show, in the order it shows them.
EPISODE_FIELDS: tuple[EpisodeField, ...] = typing.get_args(EpisodeField)
#: What `Episode.format` shows unless told otherwise; the rollout is long, so it is left out.
DEFAULT_FIELDS: tuple[EpisodeField, ...] = (
    "instruction",
    "result",
    "additional_data",
    "completed_at",
)

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"

#: The XML element of a field whose element is not named after it (the original layout).
ELEMENT_NAMES: dict[str, str] = {"instruction": "task"}

# An XML name, ASCII only: a letter or underscore, then letters, digits, `_`, `-` or `.`.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
# Names the block itself uses: an additional_data key must not be able to impersonate them,
# in any letter case (a model reading `</RECALLED_EPISODES>` takes it for the block's end).
_RESERVED = frozenset({*EPISODE_FIELDS, "id", "task", "episode", "recalled_episodes"})


def check_element_name(name: object) -> str:
    """Return `name` if it can be an XML element of an episode, else raise `ValidationError`.

    Allowed: 1-64 ASCII letters, digits, `_`, `-`, `.`, starting with a letter or `_`, not
    starting with `xml` and not one of the names the episode block uses itself (in any
    letter case).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationError(
            f"additional_data key {name!r} is not a valid XML element name: use 1-64 ASCII "
            "letters, digits, '_', '-' or '.', starting with a letter or '_'"
        )
    if name.lower().startswith("xml"):
        raise ValidationError(f"additional_data key {name!r} starts with 'xml', which XML reserves")
    if name.lower() in _RESERVED:
        raise ValidationError(
            f"additional_data key {name!r} is a name the episode block uses itself; "
            f"choose another key (reserved: {', '.join(sorted(_RESERVED))})"
        )
    return name


def _now() -> datetime:
    return datetime.now(UTC)


class Task(TypedConstruction):
    """Something an agent was asked to do. Prints as its instruction."""

    id_: Id = Field(default_factory=lambda: str(uuid.uuid4()))
    """The task's id; every attempt at the task (each its own episode) shares it."""
    instruction: NonBlankText
    """What the agent was asked to do."""

    def __str__(self) -> str:
        return self.instruction


class TaskResult(TypedConstruction):
    """What an agent answered for a task. Prints as its content."""

    task_id: Id
    """The id of the task this answers."""
    content: StrictStr
    """The answer."""

    def __str__(self) -> str:
        return self.content


class Episode(TypedConstruction):
    """One attempt at a task: the task, the agent's rollout, and how it ended.

    Episodes are frozen: `replace(...)` returns a validated copy with changes.

    ```python
    from episodex import Episode, Task, TaskResult

    task = Task(instruction="Convert 3 miles to km")
    episode = Episode(task=task, rollout="thought: 1 mile = 1.609 km",
                      result=TaskResult(task_id=task.id_, content="4.83 km"))
    print(episode.format())                    # XML: instruction, result, completed_at
    print(episode.format(mode="concat", include=["instruction", "result"]))
    ```
    """

    id_: Id = Field(default_factory=lambda: str(uuid.uuid4()))
    """The episode's id: writing the same id again replaces it (`delete`, `update` use it)."""
    task: Task
    """The task attempted."""
    rollout: StrictStr = ""
    """The agent's full trajectory: thoughts, tool calls, observations."""
    result: TaskResult | None = None
    """The final answer, or None when the attempt failed."""
    additional_data: dict[str, StrictStr] | None = None
    """Extra text shown in the prompt, one XML element per key (e.g. `reflection`)."""
    error: StrictStr | None = None
    """What went wrong, when the attempt failed (an exception becomes `Type: message`)."""
    metadata: JsonObject = Field(default_factory=dict[str, Any])
    """Any JSON object: filterable in store searches, shown only when asked for."""
    completed_at: UtcDatetime = Field(default_factory=_now)
    """When the attempt ended (naive times are taken as UTC)."""

    @field_validator("error", mode="before")
    @classmethod
    def _exception_text(cls, value: Any) -> Any:
        if isinstance(value, BaseException):
            return f"{type(value).__name__}: {value}"
        return value

    @field_validator("additional_data")
    @classmethod
    def _element_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None:
            for key in value:
                try:
                    check_element_name(key)
                except ValidationError as exc:
                    raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _result_matches_task(self) -> Self:
        if self.result is not None and self.result.task_id != self.task.id_:
            raise ValueError(
                f"result.task_id {self.result.task_id!r} is not the task's id {self.task.id_!r}"
            )
        return self

    # -- rendering -----------------------------------------------------------------------

    def fields(self, include: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """The `(element name, text)` pairs `format` renders, in order, empty ones left out.

        Args:
            include: Field names from `EPISODE_FIELDS`, rendered in the order given (a name
                given twice is shown once); None or empty means `DEFAULT_FIELDS`.
                `additional_data` expands to one pair per key; `instruction` is rendered
                as the `<task>` element, as in the original layout.
        """
        pairs: list[tuple[str, str]] = []
        for name in resolve_fields(include):
            if name == "additional_data":
                for key, text in (self.additional_data or {}).items():
                    # Checked again here: the dict itself can still be changed in place.
                    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                        raise ValidationError(
                            f"additional_data[{key!r}] must be text, got {type(text).__name__} "
                            "(the dict was changed after the episode was made)"
                        )
                    pairs.append((check_element_name(key), text))
                continue
            text = self._field_text(name)
            if text:
                pairs.append((ELEMENT_NAMES.get(name, name), text))
        return pairs

    def _field_text(self, name: str) -> str:
        if name == "id_":
            return self.id_
        if name == "task_id":
            return self.task.id_
        if name == "instruction":
            return self.task.instruction
        if name == "rollout":
            return self.rollout
        if name == "result":
            return self.result.content if self.result is not None else ""
        if name == "error":
            return self.error or ""
        if name == "metadata":
            if not self.metadata:
                return ""
            try:
                return json.dumps(self.metadata, ensure_ascii=False, sort_keys=True)
            except (TypeError, ValueError) as exc:  # changed in place after it was validated
                raise ValidationError(f"metadata is no longer a JSON object: {exc}") from None
        return self.completed_at.strftime(TIME_FORMAT)

    def format(self, mode: FormatMode = "xml", include: Iterable[str] | None = None) -> str:
        """Render the episode for a prompt (`xml`) or for embedding (`concat`).

        Args:
            mode: `xml` gives an `<episode>` element with one child element per field, text
                escaped (the instruction as `<task>`); `concat` gives the raw values, one per
                line, unescaped and unlabelled.
            include: Field names from `EPISODE_FIELDS`, shown in the order given; None or
                an empty list means `DEFAULT_FIELDS` (instruction, result, additional_data,
                completed_at).
        """
        if mode == "xml":
            return render_xml(self.fields(include))
        if mode == "concat":
            return "\n".join(text for _, text in self.fields(include))
        raise ValidationError(f"mode must be 'xml' or 'concat', got {mode!r}")

    def __str__(self) -> str:
        return self.format()

    # -- storage -------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The episode as a JSON object (times as ISO 8601); `Episode.parse` reads it back."""
        return self.model_dump(mode="json")


def resolve_fields(include: Iterable[str] | None) -> tuple[EpisodeField, ...]:
    """Validate an `include` list, keeping its order; None or empty means the default fields."""
    if include is None:
        return DEFAULT_FIELDS
    if isinstance(include, str):
        raise ValidationError(f"include must be a list of field names, not the string {include!r}")
    names = list(include)
    if not names:
        return DEFAULT_FIELDS
    unknown = [n for n in names if n not in EPISODE_FIELDS]
    if unknown:
        raise ValidationError(
            f"unknown episode field(s) {unknown!r} in include; choose from {list(EPISODE_FIELDS)}"
        )
    # dict.fromkeys keeps the first occurrence of each name, in the caller's order.
    return tuple(typing.cast("list[EpisodeField]", list(dict.fromkeys(names))))


def render_xml(pairs: Iterable[tuple[str, str]], *, indent: str = "") -> str:
    """An `<episode>` element from validated `(name, text)` pairs; every text is escaped."""
    lines = [f"{indent}<episode>"]
    lines.extend(f"{indent}  <{name}>{xml_text(text)}</{name}>" for name, text in pairs)
    lines.append(f"{indent}</episode>")
    return "\n".join(lines)
