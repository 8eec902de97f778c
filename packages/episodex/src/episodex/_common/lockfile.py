"""A store folder's cross-process lock, taken before anything in the folder is created.

One lock file per store folder, held with `flock` for as long as the store is open: a second
process (or a second open of the same folder) gets `StoreLockedError` at once, before it has
created or changed anything, so two processes creating one new store never race. The lock file
also tells whether the folder is still the one that was opened: `check()` refuses writes once
the folder was deleted or replaced, instead of acknowledging writes that go nowhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from episodex._common.errors import StoreClosedError, StoreLockedError

__all__ = ["FolderLock"]

LOCK_NAME = ".episodex.lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the engines' own file locks remain
    fcntl = None


class FolderLock:
    """Hold the lock of `folder` (created if missing) until `release()`.

    Args:
        folder: The store folder.
        what: How messages name the store ("the store", "the task store").
        advice: What to do when the folder is held elsewhere.
        name: The lock file's name in the folder.
        other: Who else may hold it, as messages say ("process").
    """

    def __init__(
        self,
        folder: Path,
        *,
        what: str,
        advice: str,
        name: str = LOCK_NAME,
        other: str = "process or another memory object",
    ) -> None:
        self.folder = folder
        self.path = folder / name
        self.what = what
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(self._fd)
                self._fd = None
                raise StoreLockedError(
                    f"{what} at {folder} is open in another {other}; {advice}"
                ) from None
        self._identity = self._stat_identity()

    def _stat_identity(self) -> tuple[int, int]:
        assert self._fd is not None
        st = os.fstat(self._fd)
        return st.st_dev, st.st_ino

    def check(self) -> None:
        """Raise `StoreClosedError` if the folder was deleted or replaced since it was opened."""
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._identity:
            raise StoreClosedError(
                f"{self.what} folder {self.folder} was deleted or replaced while open; nothing "
                "was written. Close this memory and open the store again (from a backup, or a "
                "new folder and an import)"
            )

    def release(self) -> None:
        """Let the folder go (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
