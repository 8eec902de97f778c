"""The models episodex runs offline, as files: ONNX graphs, tokenizers and configs.

Each model is a folder next to this module, listed in `manifest.json` with the sha256 of every
file, where it was built from and how its export compared with the reference implementation.
`model_path` checks a model's files against the manifest before handing out its folder, so a
corrupted or replaced file is refused instead of loaded. `build_models.py` (in the source
distribution) rebuilds every file from the source wheels.
"""

from __future__ import annotations

import hashlib
import json
import threading
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["MODELS", "ModelFileError", "manifest", "model_path"]

_HERE = Path(__file__).resolve().parent

#: The models this package ships.
MODELS = ("all-MiniLM-L6-v2", "splade-tiny")


class ModelFileError(RuntimeError):
    """A model file is missing or does not have the sha256 the manifest records."""


@cache
def manifest() -> dict[str, Any]:
    """The parsed `manifest.json`: per model its files' sha256, source, check and settings."""
    return json.loads((_HERE / "manifest.json").read_text(encoding="utf-8"))


_verified: set[str] = set()
_lock = threading.Lock()


def model_path(name: str) -> Path:
    """Return the folder of model `name` after checking each of its files' sha256.

    The check runs once per process and model: a loader that must know the bytes it loads are
    the checked ones hashes them itself (the core does).

    Raises:
        KeyError: `name` is not one of `MODELS`.
        ModelFileError: A file or the manifest is missing, unreadable or altered; reinstall
            episodex-models.
    """
    if name not in MODELS:
        raise KeyError(name)
    try:
        files: dict[str, str] = dict(manifest()["models"][name]["files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # A truncated or edited manifest is a damaged install like a damaged model file.
        raise ModelFileError(
            f"{_HERE / 'manifest.json'} cannot be read or does not list {name!r} ({exc!r}): "
            "reinstall episodex-models"
        ) from exc
    folder = _HERE / name
    with _lock:
        if name not in _verified:
            for file, expected in files.items():
                path = folder / file
                if not path.is_file():
                    raise ModelFileError(f"{path} is missing: reinstall episodex-models")
                try:
                    digest = _sha256(path)
                except OSError as exc:
                    raise ModelFileError(
                        f"{path} cannot be read ({exc}): reinstall episodex-models"
                    ) from exc
                if digest != expected:
                    raise ModelFileError(
                        f"{path} does not have the sha256 {expected} the manifest records: "
                        "reinstall episodex-models"
                    )
            _verified.add(name)
    return folder


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
