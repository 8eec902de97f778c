"""The REPEAT/AVOID prompt block, with every stored text made safe for one lesson line."""

from __future__ import annotations

import re
from collections.abc import Iterable

from episodex._common.errors import ValidationError
from episodex._common.text import clip
from episodex._common.validation import require_int
from episodex._lessons.lookalikes import neutralize_markers, normalize_visible
from episodex._lessons.model import RetrievedLesson, StepMemory, action_parts

__all__ = ["LESSONS_HEADER", "format_lessons", "sanitize_lesson_text"]

LESSONS_HEADER = (
    "# Lessons From Previous Attempt\n"
    "These are results from a PREVIOUS attempt at this task.\n"
    "- REPEAT: actions that worked before — do them again now\n"
    "- AVOID: mistakes from before — do NOT repeat them"
)
"""The first four lines of every lessons block."""


#: Shortest cut of a lesson text: below it every lesson reads `…` and says nothing.
_MIN_CHARS = 10

_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


_LEADING_MARKS = re.compile(r"^(?:\s|#|[-*>](?=\s))+")


_LEADING_NUMBER = re.compile(r"^(\d+)\s*[.)]")


def sanitize_lesson_text(text: str, *, max_chars: int = 300) -> str:
    """Make stored text safe inside one lesson line.

    The text is folded to what a reader sees first (NFKC; zero-width and other format
    characters removed), so no disguise survives the rest: line breaks are collapsed (it
    cannot start a line of its own), leading `#`, bullets and list numbers (`2.`) of each
    former line are neutralised, `REPEAT:` / `AVOID:` markers lose their colon (in any
    look-alike spelling or with any colon), control characters become spaces, and the result
    is cut to `max_chars`.
    """
    max_chars = require_int("max_chars", max_chars, minimum=_MIN_CHARS)
    parts: list[str] = []
    for segment in _BREAKS.split(normalize_visible(text)):
        segment = _LEADING_MARKS.sub("", _CONTROL.sub(" ", segment))
        segment = _LEADING_NUMBER.sub(r"(\1)", segment)
        if segment.strip():
            parts.append(segment)
    flat = " ".join(" ".join(parts).split())
    return clip(neutralize_markers(flat), max_chars)


def _describe_action(memory: StepMemory, max_chars: int) -> str:
    parts = action_parts(memory.action)
    target = memory.action_element_text or parts.target
    if target is None:
        return sanitize_lesson_text(memory.action, max_chars=max_chars)
    text = f"{parts.verb}: '{target}'"
    if parts.value is not None:
        text += f" with '{parts.value}'"
    return sanitize_lesson_text(text, max_chars=max_chars)


def format_lessons(lessons: Iterable[RetrievedLesson | StepMemory], *, max_chars: int = 300) -> str:
    """Render lessons as the REPEAT/AVOID prompt block (`""` when there is no graded lesson).

    Each lesson line shows the page path and a percentage: for retrieved lessons the match
    score (the re-ranking score), for plain step memories (loaded or imported) the grader's
    `confidence`, when it has one. Pending steps are left out.
    """
    max_chars = require_int("max_chars", max_chars, minimum=_MIN_CHARS)
    if isinstance(lessons, RetrievedLesson | StepMemory | str | bytes):
        raise ValidationError("format_lessons takes a list of lessons, not a single one")
    if not isinstance(lessons, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError(
            f"format_lessons takes a list of lessons, got {type(lessons).__name__}"
        )
    lines: list[str] = []
    number = 0
    for item in lessons:
        if isinstance(item, RetrievedLesson):
            memory, score = item.memory, item.score
        elif isinstance(item, StepMemory):  # pyright: ignore[reportUnnecessaryIsInstance]
            memory, score = item, item.confidence
        else:
            raise ValidationError(
                f"format_lessons takes step memories or retrieved lessons, got {type(item).__name__}"
            )
        if memory.kind is None:
            continue
        number += 1
        path = (
            sanitize_lesson_text(memory.env_pre.path, max_chars=80)
            .replace("[", "(")
            .replace("]", ")")
        )
        where = f"{path} {round(min(1.0, max(0.0, score)) * 100)}%" if score is not None else path
        lines.append(f"{number}. {memory.kind}: [{where}] {_describe_action(memory, max_chars)}")
        reason = memory.outcome_reason or (
            memory.task_incomplete if memory.kind == "AVOID" else None
        )
        if reason:
            label = "This worked:" if memory.kind == "REPEAT" else "This failed:"
            lines.append(f"   {label} {sanitize_lesson_text(reason, max_chars=max_chars)}")
        if memory.kind == "AVOID" and memory.correction:
            lines.append(
                f"   Do this instead: {sanitize_lesson_text(memory.correction, max_chars=max_chars)}"
            )
    if not lines:
        return ""
    return LESSONS_HEADER + "\n" + "\n".join(lines)
