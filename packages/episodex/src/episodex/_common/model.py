"""The base of every stored record and the small field types the records share.

Conversation episodes, task episodes and step lessons are frozen pydantic models that refuse
unknown fields and report bad input as episodex's `ValidationError`; their ids, texts, times
and JSON objects are checked by the same types here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, model_validator
from pydantic import ValidationError as PydanticValidationError

from episodex._common.errors import ValidationError
from episodex._common.validation import (
    MAX_ID_LENGTH,
    describe_validation_error,
    json_object,
    parse_model,
    storable_int,
    storable_text,
)

__all__ = [
    "FrozenModel",
    "Id",
    "JsonObject",
    "NonBlankId",
    "NonBlankText",
    "TypedConstruction",
    "UtcDatetime",
    "UuidStr",
    "canonical_uuid",
    "not_blank",
    "parse_to_write",
    "to_utc",
]


def not_blank(value: str) -> str:
    """A validator: the text must have a character that is not whitespace."""
    if not value.strip():
        raise ValueError("must contain text, not only whitespace")
    return value


def canonical_uuid(value: str) -> str:
    """A validator: the text must be a UUID; returns its canonical lowercase form."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValueError(f"must be a UUID string, got {value!r}") from None


def to_utc(value: datetime) -> datetime:
    """The time in UTC; a naive time is taken as UTC, so stored times compare across machines."""
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is out of range once converted to UTC") from None


#: An id: the one id rule (`require_id`) of every read and write: 1 to `MAX_ID_LENGTH`
#: characters, not only whitespace, so an id a write accepts can always be read back.
NonBlankId = Annotated[
    StrictStr, Field(min_length=1, max_length=MAX_ID_LENGTH), AfterValidator(not_blank)
]
#: The same rule, under its first name.
Id = NonBlankId
#: Text with at least one character that is not whitespace.
NonBlankText = Annotated[StrictStr, AfterValidator(not_blank)]
#: A point id: a UUID string, kept in canonical form.
UuidStr = Annotated[StrictStr, AfterValidator(canonical_uuid)]
#: A time, stored in UTC (naive times are taken as UTC).
UtcDatetime = Annotated[datetime, AfterValidator(to_utc)]
#: Any JSON object (str keys, JSON values, no NaN), stored as its JSON round trip.
JsonObject = Annotated[dict[str, Any], AfterValidator(json_object)]


class FrozenModel(BaseModel):
    """Frozen, strict about extra fields, and parsed into episodex's `ValidationError`.

    `parse` is the checked way in. Construction by keyword (`Model(...)`) is pydantic's own
    and raises its error, unless a subclass turns that too (`TypedConstruction`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: How error messages name the record ("episode", "step memory"); default: the class name.
    record_name: ClassVar[str | None] = None

    @model_validator(mode="after")
    def _storable(self) -> Self:
        # Every text and integer of every record, checked here once: what passes validation
        # is what the engines store and return unchanged (no write may fail after the
        # up-front check, no value may come back changed).
        pending: list[tuple[str, object]] = [
            (name, getattr(self, name)) for name in type(self).model_fields
        ]
        while pending:
            where, value = pending.pop()
            if isinstance(value, str):
                storable_text(value, where)
            elif isinstance(value, bool):
                continue
            elif isinstance(value, int):
                storable_int(value, where)
            elif isinstance(value, list | tuple):
                pending.extend((where, v) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            elif isinstance(value, dict):
                for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
                    pending.extend(((where, key), (f"{where}.{key}", item)))
        return self

    @classmethod
    def parse(cls, data: Self | Mapping[str, Any], *, where: str = "") -> Self:
        """Validate a mapping (or pass an instance through), raising episodex's `ValidationError`.

        Args:
            data: An instance or a mapping of its fields.
            where: A prefix locating the record in messages, such as "episode 3: ".
        """
        return parse_model(cls, data, what=cls.record_name or cls.__name__, where=where)

    def replace(self, **changes: Any) -> Self:
        """A validated copy with some fields changed (the model itself is frozen)."""
        return type(self).parse({**self.model_dump(), **changes})


class TypedConstruction(FrozenModel):
    """A `FrozenModel` whose construction by keyword also raises episodex's `ValidationError`.

    Pydantic calls a custom `__init__` for nested models too, so a model nested in another
    reports its error inside the outer one's.
    """

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            what = type(self).record_name or type(self).__name__
            raise ValidationError(describe_validation_error(exc, what)) from None


_Record = TypeVar("_Record", bound=FrozenModel)


def parse_to_write(cls: type[_Record], data: object, *, where: str = "") -> _Record:
    """`cls.parse` for a record a write takes from its caller: an instance is validated again.

    Pydantic validates neither `model_copy(update=...)` nor a change made in place to a frozen
    record's dict or list, so an instance may hold what validation never saw. An id in another
    spelling of its UUID (upper case) is one: the owner checks compare ids as text and took it
    for another id than the one point the engine writes, so another user's episode or step was
    replaced. Validated again, the id is canonical, and every other field checked.
    """
    if isinstance(data, cls):
        # Python mode, no serializer warnings: a changed value reaches the checks as it is.
        data = data.model_dump(warnings=False)
    return parse_model(cls, data, what=cls.record_name or cls.__name__, where=where)
