"""One way to replace a file atomically: a private temp file beside it, fsync, rename.

The temp file gets an unpredictable name created with `O_EXCL` (`tempfile.mkstemp`), so two
writers of the same target never share it and a planted symlink is never followed; readers
see the old file or the new one, whole, never a mix. A process killed between creating the temp
file and the rename leaves it behind; `remove_stale_temps` deletes such files once their writer
is known to be gone (the caller holds the lock every writer of the target holds).
"""

from __future__ import annotations

import contextlib
import os
import string
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "remove_stale_temps"]


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


_TEMP_SUFFIX = ".tmp"
# mkstemp's random part: eight of these characters.
_RANDOM_LENGTH = 8
_RANDOM_CHARACTERS = frozenset(string.ascii_lowercase + string.digits + "_")


def _written_through(path: Path) -> Path:
    """The file a write of `path` replaces: the target of a symlink, not the link.

    Replaced, the link became a copy of its own and its target kept the old text (an export
    to a link, a store file kept elsewhere), as a shell's `>` or an editor never does.
    """
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def atomic_write(path: Path) -> Generator[IO[str]]:
    """Write the text of `path` through a temp file that replaces it only on success.

    A symlink at `path` stays: the file it names is replaced.
    """
    path = _written_through(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX)
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


def remove_stale_temps(path: Path) -> int:
    """Delete the temp files killed `atomic_write`s of `path` left; how many were deleted.

    Only files of `atomic_write`'s own naming for `path` (never a folder, never another
    file): the caller must hold the lock every writer of `path` holds, so none is in flight.
    A file that cannot be deleted is left for the next open.
    """
    path = _written_through(path)  # where atomic_write made them
    prefix = _temp_prefix(path)
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)):
            continue
        middle = name[len(prefix) : -len(_TEMP_SUFFIX)]
        if len(middle) != _RANDOM_LENGTH or not set(middle) <= _RANDOM_CHARACTERS:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed += 1
    return removed
