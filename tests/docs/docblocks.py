"""Find the fenced Python blocks of a docstring or a Markdown file, and run them.

Shared by `test_docstring_examples.py` and `test_readme.py`; the conventions are described in
`test_docstring_examples.py`'s module docstring.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import linecache
import re
import textwrap
from dataclasses import dataclass
from typing import Any

NO_RUN = "docs: no-run"
_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_EXPECT = re.compile(r"#\s*->\s*(?P<text>.+?)\s*$")
_CLOSERS = ("episodex", "langchain_episodex", "llama_index.memory.episodex")


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    language: str
    code: str
    line: int  # 1-based line of the first code line in its text
    no_run_reason: str | None  # set when the block is marked `docs: no-run`

    @property
    def expected_output(self) -> list[str]:
        """Texts announced with `# -> text`: the block's output must contain each."""
        return [m.group("text") for m in map(_EXPECT.search, self.code.splitlines()) if m]


def _no_run_reason(code: str, before: str) -> str | None:
    for text in (before, *code.splitlines()[:1]):
        stripped = (
            text.strip().removeprefix("<!--").removesuffix("-->").strip().removeprefix("#").strip()
        )
        if stripped.startswith(NO_RUN):
            return stripped[len(NO_RUN) :].strip(" :-()") or ""
    return None


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text or docstring, in order."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence = opened.group("fence")
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n"
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        blocks.append(
            Block(opened.group("info").lower(), body, i + 2, _no_run_reason(body, before))
        )
        i = end + 1
    return blocks


def python_blocks(text: str) -> list[Block]:
    """The fenced blocks tagged `python` (or `py`)."""
    return [b for b in fenced_blocks(text) if b.language in ("python", "py")]


def compile_block(block: Block, filename: str, *, first_line: int | None = None) -> Any:
    """Compile a block with top-level `await` allowed; tracebacks show its source and lines."""
    if filename.startswith("<"):
        source = block.code
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    else:  # a real file: pad so that line numbers in tracebacks are the file's
        source = "\n" * ((first_line if first_line is not None else block.line) - 1) + block.code
    return compile(
        source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )


class BlockRunner:
    """Runs blocks one after another in one namespace.

    Blocks with top-level `await` are awaited on a private event loop that is idle between
    blocks, so a block may also call `asyncio.run(...)` itself, as scripts do.
    """

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self._runner = asyncio.Runner()

    def run(self, block: Block, filename: str, *, first_line: int | None = None) -> str:
        """Run a block; returns what it printed, after checking its `# -> text` promises."""
        code = compile_block(block, filename, first_line=first_line)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            result = eval(code, self.namespace)
            if inspect.iscoroutine(result):
                self._runner.run(result)
        printed = out.getvalue()
        for text in block.expected_output:
            assert text in printed, f"{filename}: expected output {text!r}, got:\n{printed}"
        return printed

    def close(self) -> None:
        """Close the episodex objects the blocks left open (releasing store folders), then the loop."""
        try:
            for value in list(self.namespace.values()):
                if isinstance(value, type) or not type(value).__module__.startswith(_CLOSERS):
                    continue
                close = getattr(value, "close", None) or getattr(value, "aclose", None)
                if callable(close):
                    result = close()
                    if inspect.iscoroutine(result):
                        self._runner.run(result)
        finally:
            self._runner.close()

    def __enter__(self) -> BlockRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
