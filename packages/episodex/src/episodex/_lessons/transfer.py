"""Step memories out and back in: JSON and CSV that round-trip, and the REPEAT/AVOID prompt.

The prompt block is read by a model, so every stored text in it is flattened to one line and
stripped of anything that would read as a header or a lesson line of its own.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from episodex._common.errors import ImportFileError, ValidationError
from episodex._common.text import bad_lines_summary, without_bom
from episodex._common.validation import read_json
from episodex._lessons.block import format_lessons
from episodex._lessons.camel import from_camel, is_camel_record
from episodex._lessons.model import RetrievedLesson, StepMemory

__all__ = ["export_memories", "import_memories"]

ExportFormat = Literal["json", "csv", "prompt"]


# -- json and csv ------------------------------------------------------------------------

_COLUMNS = tuple(StepMemory.model_fields)
#: Columns a later release added: an earlier release's csv lacks them, read as empty cells.
_LATER_COLUMNS = frozenset({"embedding_model"})
_JSON_COLUMNS = {"env_pre", "env_post", "internal_state_embedding", "metadata"}


def _refuse_non_list(items: object) -> None:
    """`ValidationError` unless `items` is a list (an iterable) of memories, in every format.

    A single step (a model iterates as its fields) or None failed with a raw TypeError, or,
    in the prompt format, with an error about a tuple the caller never gave.
    """
    if isinstance(items, Mapping | str | bytes | StepMemory | RetrievedLesson):
        raise ValidationError("export_memories takes a list of step memories, not a single one")
    if not isinstance(items, Iterable):
        raise ValidationError(
            f"export_memories takes a list of step memories, got {type(items).__name__}"
        )


def _memories(
    items: Iterable[StepMemory | RetrievedLesson | Mapping[str, Any]],
) -> list[StepMemory]:
    out: list[StepMemory] = []
    for i, item in enumerate(items):
        out.append(
            item.memory
            if isinstance(item, RetrievedLesson)
            else StepMemory.parse(item, where=f"memory {i}: ")
        )
    return out


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    if isinstance(value, float):
        return repr(value)
    return str(value)


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV
# injection"). Such a cell is written with a quote in front, which the apps show as text.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _needs_quote(text: str) -> bool:
    """Whether `text` gets a leading quote on export: it reads as a formula after its quotes.

    Counting quotes a formula start follows (not only a formula start) makes the escape
    reversible: `'=x` exported is `''=x`, so import takes exactly one quote off both. A
    quote before anything else (`'tis`) is left as it is, as earlier exports wrote it.
    """
    return text.lstrip("'").startswith(_FORMULA_STARTS)


def _escaped(cell: str) -> str:
    return "'" + cell if _needs_quote(cell) else cell


def _unescaped(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and _needs_quote(cell[1:]) else cell


def export_memories(
    memories: Iterable[StepMemory | RetrievedLesson | Mapping[str, Any]], fmt: ExportFormat = "json"
) -> str:
    """Export step memories as `json` (an array), `csv` (one row each) or `prompt` text.

    `json` and `csv` keep every field and come back unchanged through `import_memories`;
    in csv, nested fields (states, embedding, metadata) are JSON text and absent values are
    empty cells. A csv cell that a spreadsheet would run as a formula (it starts with `=`,
    `+`, `-`, `@`, a tab or a carriage return, perhaps after quotes) is written with a `'` in
    front, shown as text by the apps and taken off again by `import_memories`. `prompt` is
    the REPEAT/AVOID block of `format_lessons`.
    """
    _refuse_non_list(memories)
    if fmt == "prompt":
        return format_lessons(
            m if isinstance(m, RetrievedLesson | StepMemory) else StepMemory.parse(m)
            for m in memories
        )
    if fmt not in ("json", "csv"):
        raise ValidationError(f"fmt must be 'json', 'csv' or 'prompt', got {fmt!r}")
    parsed = _memories(memories)
    if fmt == "json":
        return json.dumps([m.model_dump(mode="json") for m in parsed], ensure_ascii=False, indent=2)
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(_COLUMNS)
    for memory in parsed:
        data = memory.model_dump(mode="python")
        data["env_pre"] = memory.env_pre.model_dump(mode="json")
        data["env_post"] = memory.env_post.model_dump(mode="json") if memory.env_post else None
        writer.writerow([_escaped(_cell(data[c])) for c in _COLUMNS])
    return buffer.getvalue()


def _fail(errors: list[tuple[int, str]], what: str) -> ImportFileError:
    summary = bad_lines_summary(errors, what=what)
    return ImportFileError(f"{len(errors)} bad {what}(s), nothing imported: {summary}", errors)


# The numbers `export_memories` writes (`str` of a count, `repr` of a float), in ASCII digits.
# `int()` and `float()` take much more: `1_0` (digit grouping) is 10, full-width and other
# scripts' digits and padding are numbers too, so a mangled cell was read as another number.
_COUNT = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", re.ASCII)


def _number(column: str, text: str, pattern: re.Pattern[str]) -> str:
    if pattern.fullmatch(text) is None:
        raise ValidationError(f"{column}: {text!r:.40} is not a plain number")
    return text


def _from_row(row: Mapping[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for column in _COLUMNS:
        if column not in row:
            continue  # a column added after the release that wrote the file (_check_header)
        cell = row[column]
        if cell is None:  # pyright: ignore[reportUnnecessaryComparison]
            raise ValidationError(f"the row ends before the {column!r} cell")
        text = _unescaped(cell)
        if text == "":
            continue  # absent: the field's default (None for every optional field)
        if column in _JSON_COLUMNS:
            data[column] = read_json(text)
        elif column in ("rep", "step_num"):
            data[column] = int(_number(column, text, _COUNT))
        elif column == "confidence":
            # An int confidence (0 or 1) is written `1`, a float always with a `.` or an
            # exponent (`1.0`): read back as what was written, as json does.
            number = _number(column, text, _DECIMAL)
            data[column] = int(number) if _COUNT.fullmatch(number) else float(number)
        else:
            data[column] = text
    return data


def _check_header(header: tuple[str, ...]) -> None:
    """`ImportFileError` unless `header` is an export's: today's, or an earlier release's."""
    expected = tuple(c for c in _COLUMNS if c in header or c not in _LATER_COLUMNS)
    if header == expected:
        return
    missing = [c for c in expected if c not in header]
    extra = [c for c in header if c not in _COLUMNS]
    twice = [c for c in dict.fromkeys(header) if header.count(c) > 1]
    if missing or extra:
        why = f"missing {missing}, unknown {extra}"
    elif twice:
        why = f"it names {', '.join(map(repr, twice))} more than once"
    else:
        why = f"its columns are not in the export's order ({', '.join(expected)})"
    raise ImportFileError(f"the csv header is not a step-memory export: {why}", [(1, "bad header")])


def import_memories(
    text: str,
    fmt: Literal["json", "csv"] = "json",
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
) -> list[StepMemory]:
    """Read memories written by `export_memories` (json or csv); `ImportFileError` lists bad ones.

    A leading byte order mark (a file saved as "UTF-8 with BOM", read as UTF-8) is skipped.

    JSON in the original camelCase schema (`stepId`, `envPre`, `createdAt`, a numeric `id`,
    states as JSON text) is read too, record by record: a numeric id becomes a UUID derived
    from it and the step's user, agent, session and run (so two exports' id 1 never meet)
    and is kept as `metadata["original_id"]`, keys the schema does not know are kept
    under `metadata["imported"]`, and `createdAt` may be ISO text or epoch seconds or
    milliseconds. Nothing is stored: pass the result to `StepLessonMemory.store_memories`.

    Args:
        text: The exported text.
        fmt: `json` or `csv`.
        user_id: The user for camelCase records that name none (the original schema had none).
        agent_id: The agent for camelCase records that name none.
    """
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError(f"import_memories takes the exported text, got {type(text).__name__}")
    if fmt == "prompt":  # pyright: ignore[reportUnnecessaryComparison]
        raise ValidationError(
            "the prompt format is for a model to read and cannot be imported; export json or csv"
        )
    if fmt not in ("json", "csv"):
        raise ValidationError(f"fmt must be 'json' or 'csv', got {fmt!r}")
    text = without_bom(text)
    errors: list[tuple[int, str]] = []
    out: list[StepMemory] = []
    if fmt == "json":
        try:
            records = read_json(text)
        except json.JSONDecodeError as exc:
            raise ImportFileError(
                f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                [(exc.lineno, exc.msg)],
            ) from None
        if not isinstance(records, list):
            raise ImportFileError(
                "a json export is an array of step memories", [(1, "not an array")]
            )
        for number, record in enumerate(records, start=1):  # pyright: ignore[reportUnknownVariableType]
            try:
                if is_camel_record(record):
                    record = from_camel(record, user_id=user_id, agent_id=agent_id)  # pyright: ignore[reportUnknownArgumentType]
                    for name, value in (("user_id", user_id), ("agent_id", agent_id)):
                        if record.get(name) is None and value is None:
                            raise ValidationError(
                                f"the record names no {name[:-3]}: pass {name}= to import_memories"
                            )
                out.append(StepMemory.parse(record))  # pyright: ignore[reportUnknownArgumentType]
            except ValidationError as exc:
                errors.append((number, str(exc)))
        if errors:
            raise _fail(errors, "record")
        return out
    # The csv module refuses a cell over its field limit (128 KiB by default), one limit for
    # the whole process: a long text `export_memories` wrote must read back, so the limit is
    # raised to this text's length when it is lower (never lowered).
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(len(text))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = tuple(reader.fieldnames or ())
    except csv.Error as exc:
        raise ImportFileError(f"not csv: {exc}", [(1, str(exc))]) from None
    _check_header(header)
    number = 0
    while True:
        number += 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            # The reader cannot go on past this: the rows read so far are not all the file.
            errors.append((number, f"not csv: {exc}"))
            break
        try:
            if None in row:
                raise ValidationError(f"{len(row[None])} cell(s) more than the header has")  # type: ignore[index]
            out.append(StepMemory.parse(_from_row(row)))
        except (ValidationError, ValueError, TypeError) as exc:
            errors.append((number, str(exc)))
    if errors:
        raise _fail(errors, "row")
    return out
