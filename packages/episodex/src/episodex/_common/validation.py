"""Validation shared by the pydantic models: readable errors, JSON objects, parsing."""

from __future__ import annotations

import inspect
import json
import json.scanner
import math
import reprlib
from collections.abc import Callable, Mapping
from numbers import Integral, Real
from typing import Any, TypeGuard, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from episodex._common.errors import ValidationError

__all__ = [
    "MAX_ID_LENGTH",
    "describe_validation_error",
    "id_problem",
    "is_finite",
    "is_integer",
    "is_real",
    "json_object",
    "parse_model",
    "require_bool",
    "require_callback",
    "require_encodable",
    "require_id",
    "require_int",
    "require_share",
    "require_text",
    "require_weight",
]

M = TypeVar("M", bound=BaseModel)


_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxstring = _SHORT.maxother = 60


def describe_validation_error(exc: PydanticValidationError, what: str) -> str:
    """One readable clause per pydantic error: field, problem, and what was given."""
    parts: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or what
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            parts.append(f"{loc} is required")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{loc} is not a field of {what}")
        elif "got " in msg:
            parts.append(f"{loc}: {msg}")
        else:
            shown = _SHORT.repr(err.get("input"))  # bounded depth: any input can be shown
            if len(shown) > 60:
                shown = shown[:57] + "..."
            parts.append(f"{loc}: {msg} (got {shown})")
    return f"invalid {what}: " + "; ".join(parts)


#: Longest id (user, agent, conversation, session, run, step, task), in characters: one rule
#: for every write and every read, so an id a read accepts can always be written too.
MAX_ID_LENGTH = 512

#: Deepest nesting of a JSON field. The embedded engine cannot read back a write-ahead-log
#: entry nested much deeper (about 120 levels broke it), and one unreadable entry would stop
#: the whole collection from opening, for every tenant: the bound keeps far below that.
MAX_JSON_DEPTH = 32
#: Largest JSON field, serialized (bytes of UTF-8).
MAX_JSON_BYTES = 1 << 20
#: Integers are stored as 64-bit: larger ones would come back as floats (changed values).
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict; a key named twice raises `_DuplicateKey`."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def _duplicate_key_error(doc: str, key: str) -> json.JSONDecodeError:
    """The error for `doc`, known to name a key twice in one object, at that object's `{`.

    The fast parser does not say where an object began: `doc` is read again (only on this
    error) with the pure-Python one, which does.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    read_object: Callable[..., Any] = decoder.parse_object  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]

    def parse_object(s_and_end: tuple[str, int], *args: Any, **kwargs: Any) -> Any:
        try:
            return read_object(s_and_end, *args, **kwargs)
        except _DuplicateKey as exc:
            raise json.JSONDecodeError(
                f"duplicate key {exc.key!r} in one object", doc, s_and_end[1] - 1
            ) from None

    decoder.parse_object = parse_object  # pyright: ignore[reportAttributeAccessIssue]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # pyright: ignore[reportAttributeAccessIssue]
    try:
        decoder.decode(doc)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("duplicate key "):
            return exc
    except (RecursionError, _DuplicateKey):
        pass
    return json.JSONDecodeError(f"duplicate key {key!r} in one object", doc, 0)


def read_json(text: str | bytes) -> Any:
    """`json.loads` for outside input: what it cannot read is always a `JSONDecodeError`.

    Python's parser recurses per level, so a line of 3,000 nested brackets would raise a raw
    `RecursionError` from any import; and a number of more digits than Python turns into an
    int (`sys.get_int_max_str_digits`, 4,300) a plain `ValueError`, which an import did not
    take for a bad line.

    An object naming a key twice is refused (`json.loads` keeps the last value without a
    word: `{"user_id": "u", "user_id": "v"}` would be read as another user than the one a
    reader of the text sees first); the error names the key and where its object begins.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        # As `json.loads` reads bytes (they were read once already: they decode).
        doc = (
            text
            if isinstance(text, str)
            else text.decode(json.detect_encoding(text), "surrogatepass")
        )
        raise _duplicate_key_error(doc, exc.key) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise  # bytes that are not UTF-8 stay a UnicodeDecodeError: callers name them so
    except (RecursionError, ValueError) as exc:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        why = (
            "nested too deeply to read"
            if isinstance(exc, RecursionError)
            else "a number has too many digits to read"
        )
        raise json.JSONDecodeError(why, doc[:100], 0) from None


def is_finite(value: float | Real) -> bool:
    """`math.isfinite`, and False for an int too large to be a float.

    Any `numbers.Real` is read (a numpy float32 is neither an int nor a float, and is taken
    wherever a float is).

    `math.isfinite(10**400)` raises a raw `OverflowError`: every check of a user's number goes
    through here, so such a number is refused with the check's own typed error.
    """
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def storable_text(value: str, where: str = "") -> str:
    """The text must be encodable as UTF-8: a lone surrogate cannot be stored or exported."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        at = f"{where}: " if where else ""
        raise ValueError(
            f"{at}text has a lone surrogate (\\u{ord(value[exc.start]):04x}) at position "
            f"{exc.start}, which cannot be stored as UTF-8"
        ) from None
    return value


def storable_int(value: int, where: str = "") -> int:
    """The integer must fit in 64 bits, as the engines store it."""
    if not INT64_MIN <= value <= INT64_MAX:
        at = f"{where}: " if where else ""
        raise ValueError(f"{at}integer {value} is outside the 64-bit range the store keeps exactly")
    return value


def json_object(value: dict[str, Any]) -> dict[str, Any]:
    """A field validator: a JSON object every engine stores and returns unchanged.

    Checked without recursion, so no nesting can overflow the stack: str keys; values None,
    bool, 64-bit int, finite float, UTF-8 encodable str, list or object; at most
    `MAX_JSON_DEPTH` levels and `MAX_JSON_BYTES` serialized. Returns the JSON round trip.
    """
    stack: list[tuple[object, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict | list) and depth > MAX_JSON_DEPTH:
            raise ValueError(f"is nested deeper than {MAX_JSON_DEPTH} levels (at {path or 'top'})")
        if isinstance(item, dict):
            for key, child in item.items():  # pyright: ignore[reportUnknownVariableType]
                if not isinstance(key, str):
                    raise ValueError(
                        f"keys must be strings, got {type(key).__name__} at {path or 'top'}"
                    )
                storable_text(key, f"key at {path or 'top'}")
                stack.append((child, depth + 1, f"{path}.{key}"[:200]))
        elif isinstance(item, list | tuple):
            for index, child in enumerate(item):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                stack.append((child, depth + 1, f"{path}[{index}]"[:200]))
        elif isinstance(item, str):
            storable_text(item, path)
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            storable_int(item, path)
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise ValueError(f"must be a JSON object (no NaN or infinity, at {path})")
        else:
            raise ValueError(
                f"must be a JSON object (str keys, JSON values): {type(item).__name__} at {path}"
            )
    text = json.dumps(value, allow_nan=False)
    if len(text.encode("utf-8")) > MAX_JSON_BYTES:
        raise ValueError(f"is larger than {MAX_JSON_BYTES} bytes as JSON")
    return json.loads(text)


def parse_model(cls: type[M], data: object, *, what: str, where: str = "") -> M:
    """Validate a mapping as `cls` (an instance passes through), raising episodex's error.

    Args:
        cls: The model class.
        data: An instance or a mapping of its fields.
        what: How the message names the record ("episode", "step memory").
        where: A prefix locating the record, such as "episode 3: ".
    """
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ValidationError(
            f"{where}expected a mapping of {what} fields, got {type(data).__name__}"
        )
    try:
        return cls.model_validate(dict(data))  # pyright: ignore[reportUnknownArgumentType]
    except PydanticValidationError as exc:
        raise ValidationError(where + describe_validation_error(exc, what)) from None


def require_text(name: str, value: object) -> str:
    """`value` must be a string with at least one non-space character, encodable as UTF-8."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string, got {_SHORT.repr(value)}")
    return require_encodable(name, value)


def require_encodable(name: str, value: str) -> str:
    """`value` must be encodable as UTF-8: no tokenizer or model reads a lone surrogate.

    A lone surrogate is half a character (a client that cuts text by UTF-16 units leaves half
    an emoji). A text to embed that holds one made the models fail (`EmbeddingError`, which
    the adapters count as an outage) or the BM25 tokenizer raise a raw `UnicodeEncodeError`;
    it is the caller's input, refused by name before any model runs.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"{name} has a lone surrogate (\\u{ord(value[exc.start]):04x}) at position "
            f"{exc.start}, which cannot be encoded as UTF-8: drop it, or replace it "
            "(text.encode('utf-8', 'replace').decode())"
        ) from None
    return value


def id_problem(value: object) -> str | None:
    """Why `value` is not a valid id, or None: the one id rule of reads and writes.

    An id is a string of 1 to `MAX_ID_LENGTH` characters, not only whitespace, storable as
    UTF-8.
    """
    if not isinstance(value, str) or not value.strip():
        return f"must be a non-empty string, got {_SHORT.repr(value)}"
    if len(value) > MAX_ID_LENGTH:
        return f"must be at most {MAX_ID_LENGTH} characters, got {len(value)}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "has a lone surrogate, which cannot be stored as UTF-8"
    return None


def require_id(name: str, value: object, *, error: type[ValueError] = ValidationError) -> str:
    """`value` must be a valid id (see `id_problem`); raises `error` naming `name` if not."""
    problem = id_problem(value)
    if problem is not None:
        raise error(f"{name} {problem}")
    return str(value)


def require_int(
    name: str, value: object, *, minimum: int = 0, error: type[ValueError] = ValidationError
) -> int:
    """`value` must be an integer (not a bool) of at least `minimum`.

    Any `numbers.Integral` is taken (a numpy int64 is not an int) and returned as an int.
    """
    if not is_integer(value) or int(value) < minimum:
        raise error(f"{name} must be an integer >= {minimum}, got {_SHORT.repr(value)}")
    return int(value)


def require_bool(name: str, value: object, *, error: type[ValueError] = ValidationError) -> bool:
    """`value` must be True or False.

    Taken by its truth, any non-empty text (`"no"`, `"false"`) would mean yes; 0 and 1 are
    refused too, as `with_stream_ranks` refuses them.
    """
    if not isinstance(value, bool):
        raise error(f"{name} must be True or False, got {_SHORT.repr(value)}")
    return value


def is_integer(value: object) -> TypeGuard[Integral]:
    """Whether `value` is an integer but not a bool: any `numbers.Integral` (numpy's too)."""
    return not isinstance(value, bool) and isinstance(value, Integral)


def is_real(value: object) -> TypeGuard[Real]:
    """Whether `value` is a real number but not a bool: any `numbers.Real` (numpy's too)."""
    return not isinstance(value, bool) and isinstance(value, Real)


def require_callback(name: str, value: object) -> None:
    """`value` must be None or callable: checked before any work, not at its first call.

    Not an `async def` function: it is called, not awaited (from a worker thread), so each
    call only made a coroutine nothing ran, with a "never awaited" warning.
    """
    if value is not None and not callable(value):
        raise ValidationError(f"{name} must be a function or None, got {_SHORT.repr(value)}")
    if value is not None and (
        inspect.iscoroutinefunction(value)
        or inspect.iscoroutinefunction(getattr(value, "__call__", None))  # noqa: B004 (an async __call__)
    ):
        raise ValidationError(
            f"{name} must be a plain function, not an async one: it is called, never awaited; "
            f"got {_SHORT.repr(value)}"
        )


def require_weight(name: str, value: object, *, error: type[ValueError] = ValidationError) -> float:
    """`value` must be a finite number (not a bool) of at least 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not is_finite(value)
        or float(value) < 0
    ):
        raise error(f"{name} must be a finite number >= 0, got {_SHORT.repr(value)}")
    return float(value)


def require_share(name: str, value: object, *, error: type[ValueError] = ValidationError) -> float:
    """`value` must be a number (not a bool) in [0, 1)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not is_finite(value)
        or not 0 <= float(value) < 1
    ):
        raise error(f"{name} must be a number in [0, 1), got {_SHORT.repr(value)}")
    return float(value)
