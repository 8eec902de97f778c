"""One way to replace a file atomically: a private temp file beside it, fsync, rename.

The temp file gets an unpredictable name created with `O_EXCL` (`tempfile.mkstemp`), so two
writers of the same target never share it and a planted symlink is never followed; readers
see the old file or the new one, whole, never a mix.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import IO

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path: Path) -> Generator[IO[str]]:
    """Write the text of `path` through a temp file that replaces it only on success."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
