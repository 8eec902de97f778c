"""Finding the JSON verdict in a grader's free-text answer, in time linear in its size.

An LLM may wrap its JSON in prose or code fences, so the reader cannot just parse the answer.
Trying a JSON parse from every `{` costs the answer's length per brace (quadratic: a 234 KB
answer took 6.5 s) and a parser that recurses per bracket dies on deep nesting. Here one pass
pairs up the brackets with an explicit stack (bounded depth), and only the paired `{...}`
spans are parsed, outermost first; a span that parses is never parsed again piecewise.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any

from episodex._common.errors import GradingError
from episodex._common.text import clip

__all__ = ["MAX_ANSWER_CHARS", "MAX_ANSWER_DEPTH", "find_verdict"]

#: Longest answer read, in characters. A verdict on even a hundred steps is a few KB; an
#: answer this long is refused rather than scanned.
MAX_ANSWER_CHARS = 512 * 1024
#: Deepest bracket nesting read. A verdict is four levels deep.
MAX_ANSWER_DEPTH = 64

_FENCE = "```"
# What the bracket scan stops at; everything else is skipped by the regex engine.
_STRUCTURE = re.compile(r'[{}\[\]"\\]')


def _fenced(text: str) -> list[str]:
    """The bodies of the ``` fences of `text` (an optional `json` tag dropped), in order."""
    bodies: list[str] = []
    start = text.find(_FENCE)
    while start != -1:
        end = text.find(_FENCE, start + 3)
        if end == -1:
            break
        body = text[start + 3 : end]
        if body[:4].lower() == "json":
            body = body[4:]
        bodies.append(body)
        start = text.find(_FENCE, end + 3)
    return bodies


def _object_spans(text: str) -> list[tuple[int, int, int]]:
    """`(start, end, depth)` of every paired `{...}` of `text`, by start; one linear pass.

    `depth` is how deep brackets nest inside the span (1 for `{}`). Outside all brackets the
    text is prose, so quotes there mean nothing; inside, a `"` opens a JSON string in which
    brackets do not count. An unpaired closing bracket is skipped; an opening one never
    closed pairs with nothing.
    """
    spans: list[tuple[int, int, int]] = []
    # Open brackets: [bracket, position, deepest stack height reached while it was open].
    stack: list[list[Any]] = []
    open_count = {"{": 0, "[": 0}
    in_string = False
    escaped_at = -1
    for match in _STRUCTURE.finditer(text):
        ch, at = match.group(), match.start()
        if at == escaped_at:
            continue
        if in_string:
            if ch == "\\":
                escaped_at = at + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = bool(stack)
        elif ch in "{[":
            stack.append([ch, at, len(stack) + 1])
            open_count[ch] += 1
        elif ch in "}]":
            opening = "{" if ch == "}" else "["
            if not open_count[opening]:
                continue  # nothing to close: skipped without a look at the stack
            # Close the nearest matching opener and drop the unclosed ones above it: the
            # walk back is paid for by the entries it removes, so the pass stays linear.
            level = len(stack) - 1
            while stack[level][0] != opening:
                level -= 1
            deepest = max(entry[2] for entry in stack[level:])
            for entry in stack[level:]:
                open_count[entry[0]] -= 1
            if opening == "{":
                spans.append((stack[level][1], at + 1, deepest - level))
            del stack[level:]
            if stack:
                stack[-1][2] = max(stack[-1][2], deepest)
    spans.sort()
    return spans


def _verdict_in(value: Any) -> dict[str, Any] | None:
    """The first object with a `steps` or `grades` key in `value`, breadth first."""
    queue: deque[Any] = deque([value])
    while queue:
        item = queue.popleft()
        if isinstance(item, dict):
            if "steps" in item or "grades" in item:
                return item  # pyright: ignore[reportUnknownVariableType]
            queue.extend(item.values())  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        elif isinstance(item, list):
            queue.extend(item)  # pyright: ignore[reportUnknownArgumentType]
    return None


def _parse(span: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(span)
    except (ValueError, RecursionError):
        # ValueError covers malformed JSON and integers longer than Python converts.
        return False, None


def find_verdict(text: str) -> dict[str, Any]:
    """The grader's JSON verdict in `text`: the first object with a `steps` (or `grades`) list.

    Fenced blocks are read first, then the whole answer. Work is linear in the answer's size
    times the bounded nesting depth, and nothing recurses on the answer.

    Raises:
        GradingError: The answer is longer than `MAX_ANSWER_CHARS`, nested deeper than
            `MAX_ANSWER_DEPTH`, or has no such object.
    """
    if len(text) > MAX_ANSWER_CHARS:
        raise GradingError(
            f"the grader's answer is {len(text)} characters, more than the {MAX_ANSWER_CHARS} "
            "read; ask for the JSON verdict only"
        )
    too_deep = False
    for chunk in [*_fenced(text), text]:
        parsed_to = -1  # spans inside one that parsed were searched through its value
        for start, end, depth in _object_spans(chunk):
            if end <= parsed_to:
                continue
            if depth > MAX_ANSWER_DEPTH:
                too_deep = True  # never parsed: the spans inside it are tried next
                continue
            ok, value = _parse(chunk[start:end])
            if not ok:
                continue  # not JSON as a whole: the spans inside it are tried next
            parsed_to = end
            found = _verdict_in(value)
            if found is not None:
                return found
    if too_deep:
        raise GradingError(
            f"the grader's answer nests brackets deeper than {MAX_ANSWER_DEPTH} levels and "
            "has no readable verdict; ask for the JSON verdict only"
        )
    raise GradingError(
        f"no JSON object with a 'steps' list in the grader's answer: {clip(text, 200)!r}"
    )
