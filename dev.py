#!/usr/bin/env python3
"""Bootstrap the workspace and run its jobs, with nothing but Python 3.11+ and pip.

    python3 dev.py demo     # the main job: `episodex demo` on the embedded default
    python3 dev.py test     # the whole test suite
    python3 dev.py check    # the gates CI runs first: lint, format, types, layering
    python3 dev.py bench peers [options]   # benchmarks/peers.py, with the `peers` group installed

The first run installs uv into `.tools/` (with pip, from PyPI), then lets uv build `.venv`
from `uv.lock` with the machine's own Python: `UV_PYTHON_DOWNLOADS=never`, because nothing in
this project may download an interpreter, a model or an encoding at run time. Extra arguments
after the job name go to `episodex` or `pytest`.

`check` runs, in order and stopping at the first failure: `ruff check`, `ruff format --check`,
pyright (strict, over the sources and the tests: the `include` list in pyproject.toml) and
`lint-imports` (the layering contract in pyproject.toml, drawn in ARCHITECTURE.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
TOOLS = ROOT / ".tools"
UV_VERSION = "0.13.9"


def _uv() -> Path:
    """Return the path of a uv binary, installing it into `.tools/` on first use."""
    uv = TOOLS / "bin" / "uv"
    if uv.exists():
        return uv
    print(f"dev.py: installing uv {UV_VERSION} into {TOOLS} ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(TOOLS)
    subprocess.run(
        [
            str(TOOLS / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"uv=={UV_VERSION}",
        ],
        check=True,
    )
    return uv


def _sync(uv: Path, env: dict[str, str], *groups: str) -> None:
    extra = [arg for g in groups for arg in ("--group", g)]
    subprocess.run(
        [
            str(uv),
            "sync",
            "--frozen",
            "--all-packages",
            "--quiet",
            *extra,
            "--python",
            sys.executable,
        ],
        check=True,
        cwd=ROOT,
        env=env,
    )


CHECKS = (
    ("ruff", "check", "."),
    ("ruff", "format", "--check", "."),
    ("pyright",),
    ("lint-imports",),
)


def _check(env: dict[str, str]) -> int:
    """Run every gate in turn; the first failing one's exit code is returned."""
    bin_dir = ROOT / ".venv" / "bin"
    for tool, *args in CHECKS:
        print(f"dev.py check: {tool} {' '.join(args)}", flush=True)
        code = subprocess.run([str(bin_dir / tool), *args], cwd=ROOT, env=env).returncode
        if code:
            return code
    return 0


def main(argv: list[str]) -> int:
    """Run `demo`, `test`, `bench NAME` (plus pass-through arguments) or `check`."""
    if not argv or argv[0] not in {"demo", "test", "check", "bench"}:
        print(__doc__)
        return 2
    job, rest = argv[0], argv[1:]
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    uv = _uv()
    # Only the benchmarks install the peer libraries; `test` syncs them away again.
    _sync(uv, env, *(["peers"] if job == "bench" else []))
    if job == "check":
        return _check(env)
    python = ROOT / ".venv" / "bin" / "python"
    if job == "bench":
        if not rest:
            print(__doc__)
            return 2
        cmd = [str(python), str(ROOT / "benchmarks" / f"{rest[0]}.py"), *rest[1:]]
    elif job == "demo":
        cmd = [str(python), "-m", "episodex", "demo", *rest]
    else:
        cmd = [str(python), "-m", "pytest", *rest]
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
