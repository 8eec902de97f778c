"""Item filters as engine conditions: value filters, namespace prefixes and suffixes.

A value filter is a JSON object: `{"status": "active"}` matches an equal field,
`{"meta": {"lang": "en"}}` a nested one, and an operator object compares:
`{"score": {"$gt": 4.5, "$lte": 9}}`. Operators are `$eq`, `$ne`, `$gt`, `$gte`, `$lt` and
`$lte`. Strings and booleans match exactly; numbers compare as numbers (1 equals 1.0), and an
integer beyond 2**53 equals only that integer. A condition compares the field itself, as
LangGraph's `InMemoryStore` does: a list field is never equal to a value it holds, nor within
a range. Every condition runs in the engine, on the payload's `value`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from numbers import Real
from typing import Any

from episodex._common.errors import ValidationError
from episodex._common.validation import INT64_MAX, INT64_MIN, MAX_JSON_DEPTH, is_finite, is_integer
from episodex._engines.collection import payload_path
from episodex._engines.plan import Condition, Filter, Match, Range

__all__ = ["WILDCARD", "namespace_matches", "prefix_filter", "value_filter"]

#: In a namespace pattern, a label that matches any label.
WILDCARD = "*"

_COMPARE = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
# Characters that would change what a payload key path means to the engine, or that no path
# can hold (a backslash: Qdrant Edge refuses the path, qdrant-client reads it).
_PATH_CHARS = frozenset('.[]"\\')
# From here on not every integer is a float: the engine would compare 2**53 + 1 as 2**53.
_EXACT_FLOAT_INTS = 2**53


def prefix_filter(base: Filter, prefix: Sequence[str]) -> Filter:
    """`base` narrowed to namespaces that start with `prefix` (`*` matches any label)."""
    conditions: list[Condition] = [
        Match(f"ns{i}", label) for i, label in enumerate(prefix) if label != WILDCARD
    ]
    if prefix:
        # A wildcard still needs a label there: ("a", "*") does not match ("a",).
        conditions.append(Range("ns_depth", gte=len(prefix)))
    return base.and_(*conditions)


def namespace_matches(
    namespace: Sequence[str], *, prefix: Sequence[str] = (), suffix: Sequence[str] = ()
) -> bool:
    """Whether `namespace` starts with `prefix` and ends with `suffix` (`*` matches any label)."""
    if len(namespace) < max(len(prefix), len(suffix)):
        return False
    if any(p not in (WILDCARD, n) for p, n in zip(prefix, namespace, strict=False)):
        return False
    tail = namespace[len(namespace) - len(suffix) :] if suffix else ()
    return all(s in (WILDCARD, n) for s, n in zip(suffix, tail, strict=True))


def value_filter(base: Filter, flt: Mapping[str, Any] | None) -> Filter:
    """`base` narrowed by a value filter; `ValidationError` for one the engine cannot run."""
    if flt is None:
        return base
    if not isinstance(flt, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError(f"filter must be a dict, got {type(flt).__name__}")
    must: list[Condition] = []
    must_not: list[Condition] = []
    _conditions(flt, ("value",), must, must_not, depth=1)
    return Filter(base.must + tuple(must), base.must_not + tuple(must_not))


def _conditions(
    flt: Mapping[str, Any],
    keys: tuple[str, ...],
    must: list[Condition],
    must_not: list[Condition],
    *,
    depth: int,
) -> None:
    if depth > MAX_JSON_DEPTH:
        # No stored value is nested deeper (`json_object`), so such a filter could match
        # nothing; refused here, before one level of recursion per level overflows the stack.
        raise ValidationError(
            f"filter on {_named(keys)!r} is nested deeper than {MAX_JSON_DEPTH} "
            "levels, deeper than any stored value"
        )
    for field, wanted in flt.items():
        if not isinstance(field, str) or not field or _PATH_CHARS & set(field):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"filter field {field!r} must be a non-empty string without '.', '[', ']', "
                "'\"' or a backslash; nest a dict to reach a nested field"
            )
        path = (*keys, field)
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            ops: Mapping[str, Any] = wanted  # pyright: ignore[reportUnknownVariableType]
            for op, operand in ops.items():
                _operator(path, op, operand, must, must_not)
        elif isinstance(wanted, Mapping):
            if not wanted:
                # LangGraph's stores read it as "an object", which the engine cannot ask; with
                # no condition at all it matched every item, with or without the field.
                raise ValidationError(
                    f"filter on {_named(path)!r} is an empty dict, which names no value to "
                    "match: give a value, an operator or a nested field"
                )
            _conditions(wanted, path, must, must_not, depth=depth + 1)  # pyright: ignore[reportUnknownArgumentType]
        else:
            _operator(path, "$eq", wanted, must, must_not)


def _named(path: tuple[str, ...]) -> str:
    """The field a message names: its keys under `value`, dotted."""
    return ".".join(path[1:])


def _operator(
    path: tuple[str, ...],
    op: str,
    operand: object,
    must: list[Condition],
    must_not: list[Condition],
) -> None:
    if op == "$eq":
        field = _field(path, _equals(path, operand))
        must.extend(field.must)
        must_not.extend(field.must_not)
    elif op == "$ne":
        must_not.append(_field(path, _equals(path, operand)))
    elif op in _COMPARE:
        bound = {_COMPARE[op]: _number(path, op, operand)}
        field = _field(path, lambda key: Range(key, **bound))
        must.extend(field.must)
        must_not.extend(field.must_not)
    else:
        raise ValidationError(
            f"filter on {_named(path)!r}: unknown operator {op!r}; use $eq, $ne, "
            "$gt, $gte, $lt or $lte"
        )


def _number(path: tuple[str, ...], op: str, operand: object) -> float:
    if isinstance(operand, bool) or not isinstance(operand, Real):
        raise ValidationError(f"filter on {_named(path)!r}: {op} needs a number, got {operand!r}")
    if not is_finite(operand):
        raise ValidationError(f"filter on {_named(path)!r}: {op} needs a finite number")
    return float(operand)


def _field(path: tuple[str, ...], condition: Callable[[str], Condition]) -> Filter:
    """The field at `path` passes `condition` and is no list.

    The engine reads a condition on a list field as "an element passes": `{"tag": "x"}`
    matched `{"tag": ["x", "y"]}` and `$ne` dropped it. `key[]` reaches a list's elements
    only (nothing of a single value), so a list whose element passes is left out.
    """
    # Every key quoted as needed: `{"first name": ...}` is a field, not an invalid path.
    key = payload_path(*path)
    return Filter(must=(condition(key),), must_not=(condition(f"{key}[]"),))


def _equals(path: tuple[str, ...], wanted: object) -> Callable[[str], Condition]:
    """The condition "equals `wanted`", for any key."""
    if isinstance(wanted, str | bool):
        return lambda key: Match(key, wanted)
    if is_integer(wanted):
        wanted = int(wanted)  # a numpy int64 is compared as the int it is, not as a float
    if isinstance(wanted, int) and abs(wanted) >= _EXACT_FLOAT_INTS:
        if not INT64_MIN <= wanted <= INT64_MAX:
            raise ValidationError(
                f"filter on {_named(path)!r}: {wanted} is outside the 64-bit range the store "
                "keeps integers in, so it cannot be compared exactly"
            )
        # Matched as the integer it is, not as the float it rounds to (so a stored float
        # that large is not matched by it).
        return lambda key: Match(key, wanted)
    if isinstance(wanted, Real):
        number = _number(path, "$eq", wanted)
        return lambda key: Range(key, gte=number, lte=number)
    raise ValidationError(
        f"filter on {_named(path)!r}: only a string, boolean or number can be "
        f"matched in the engine, got {type(wanted).__name__}"
    )
