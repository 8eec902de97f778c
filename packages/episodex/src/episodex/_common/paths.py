"""Where episodex keeps things it was not told where to keep: the default store folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from episodex._common.errors import ConfigurationError

__all__ = ["STORE_ENV", "default_store_path"]

#: The environment variable that names the default store folder.
STORE_ENV = "EPISODEX_PATH"


def _data_home() -> Path:
    # Each platform's convention for per-user application data that is not a cache.
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return Path(local) if local else Path.home() / "AppData" / "Local"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    xdg = os.environ.get("XDG_DATA_HOME")
    # The XDG spec says a relative value is invalid and must be ignored.
    return Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"


def default_store_path() -> Path:
    """The store `EpisodicMemory()` and the CLI open when given no place.

    `$EPISODEX_PATH` when set; otherwise `episodex/memory` in the user's data folder:
    `$XDG_DATA_HOME` (default `~/.local/share`) on Linux, `~/Library/Application Support` on
    macOS, `%LOCALAPPDATA%` on Windows.

    Raises:
        ConfigurationError: `$EPISODEX_PATH` is set but blank. Read as unset, a script whose
            variable behind it was empty (`EPISODEX_PATH=$STORE episodex forget ... --all`)
            worked on the default store instead of the one meant.
    """
    override = os.environ.get(STORE_ENV)
    if override is not None and not override.strip():
        raise ConfigurationError(
            f"${STORE_ENV} is set but empty; give it the store's folder, or unset it to use "
            "the default store"
        )
    if override:
        return Path(override).expanduser()
    return _data_home() / "episodex" / "memory"
