"""Every ```python block in a public docstring runs.

Scanned: the docstring of each package (`episodex`, `episodex.testing`, `episodex.plan`, `langchain_episodex`,
`llama_index.memory.episodex`), of every name in its `__all__`, and of the public methods and
properties those classes define. A package whose `__all__` is empty contributes only its
module docstring; `test_every_exported_name_is_scanned` still checks it.

Conventions for code blocks in docstrings (and in README.md, see `test_readme.py`):

- The blocks of one docstring run in order in one namespace, so a "Use" block may use the
  object an "Instantiate" block made. Each docstring starts from a fresh namespace in its own
  empty temporary working directory, so `path="./memory"` lands there.
- Top-level `await` is allowed, as in a notebook: blocks are compiled with
  `ast.PyCF_ALLOW_TOP_LEVEL_AWAIT` and awaited on an event loop that is idle between blocks,
  so a block may instead call `asyncio.run(main())` as a script does.
- A line ending in `# -> text` promises output: what the block prints must contain `text`.
- A block that cannot run here (it needs a server, an API key, or is a fragment) starts with
  the line `# docs: no-run (why)`; in Markdown, the line `<!-- docs: no-run (why) -->` just
  before the fence works too and stays invisible. Such a block is still compiled, so it must
  be valid Python, and the reason must be given.
- Tests run offline (`--disable-socket`), without `QDRANT_URL` or LLM API keys, so examples
  that switch to a real provider when a key is set take their offline path.
- Memories a block leaves open are closed after the docstring has run; blocks should still
  close what they open, because readers copy them.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docblocks import Block, BlockRunner, compile_block, python_blocks

# Slow: runs every docstring example with the real model; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

PACKAGES = (
    "episodex",
    "episodex.testing",
    "episodex.plan",
    "langchain_episodex",
    "llama_index.memory.episodex",
)
OFFLINE_ENV = ("QDRANT_URL", "QDRANT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def exported_names(package: str) -> list[str]:
    return list(getattr(importlib.import_module(package), "__all__", []))


def documented_objects(package: str) -> Iterator[tuple[str, Any]]:
    """(qualified name, object) for the package, each exported class or function, and the
    public methods and properties a class defines itself."""
    module = importlib.import_module(package)
    yield package, module
    for name in exported_names(package):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue  # constants carry no docstring of their own
        yield f"{package}.{name}", obj
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                target = value.__func__ if isinstance(value, classmethod | staticmethod) else value
                if inspect.isroutine(target) or isinstance(target, property):
                    yield f"{package}.{name}.{member}", target


def docstrings_with_code() -> list[Any]:
    params = []
    for package in PACKAGES:
        for qualname, obj in documented_objects(package):
            blocks = python_blocks(inspect.cleandoc(obj.__doc__ or ""))
            if blocks:
                params.append(pytest.param(qualname, blocks, id=qualname))
    return params


DOCSTRINGS = docstrings_with_code()


@pytest.fixture
def docs_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in OFFLINE_ENV:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.mark.parametrize(("qualname", "blocks"), DOCSTRINGS)
def test_docstring_code_runs(qualname: str, blocks: list[Block], docs_workdir: Path) -> None:
    with BlockRunner() as runner:
        for i, block in enumerate(blocks, start=1):
            filename = f"<docstring of {qualname}, block {i}>"
            if block.no_run_reason is not None:
                assert block.no_run_reason, (
                    f"{filename}: say why it cannot run: # docs: no-run (why)"
                )
                compile_block(block, filename)
                continue
            runner.run(block, filename)


def test_some_docstring_code_is_run() -> None:
    # The core documents its main classes with examples: if none are found, collection broke.
    runnable = [qualname for qualname, *_ in (p.values for p in DOCSTRINGS)]
    assert "episodex.EpisodicMemory" in runnable
    assert "episodex.SyncEpisodicMemory" in runnable


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_is_scanned(package: str) -> None:
    scanned = {qualname for qualname, _ in documented_objects(package)}
    module = importlib.import_module(package)
    for name in exported_names(package):
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isroutine(obj):
            assert f"{package}.{name}" in scanned
    assert package in scanned  # the package docstring itself, even while __all__ is empty


MARKDOWN = """
Intro.

```python
import asyncio
x = await asyncio.sleep(0, result=41)
print(x + 1)  # -> 42
```

<!-- docs: no-run (needs a server) -->
```python
connect("http://qdrant:6333")
```

```bash
echo not python
```

```python
# docs: no-run
await missing()
```

    ```py
    asyncio.run(asyncio.sleep(0))
    ```
"""


def test_block_conventions_are_honoured() -> None:
    blocks = python_blocks(MARKDOWN)
    assert [(b.line, b.no_run_reason) for b in blocks] == [
        (5, None),
        (12, "needs a server"),
        (20, ""),
        (25, None),
    ]
    assert blocks[0].expected_output == ["42"]
    with BlockRunner() as runner:
        assert runner.run(blocks[0], "<conventions>") == "42\n"  # top-level await, then print
        compile_block(blocks[1], "<conventions>")  # compiled, never run
        runner.run(blocks[3], "<conventions>")  # asyncio.run works: the loop is idle between blocks
        broken = Block("python", "print(1)  # -> 2\n", 1, None)
        with pytest.raises(AssertionError, match="expected output '2'"):
            runner.run(broken, "<conventions>")
