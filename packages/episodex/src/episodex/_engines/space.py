"""Free-space checks for the embedded store: refuse to grow it on a nearly full disk.

Qdrant Edge keeps its write-ahead log, vectors and payloads in memory-mapped files that grow
as pages are first written. On a full disk the kernel cannot back such a page and the
process is killed with SIGBUS: no exception, nothing to catch. So the store checks the free
space of its disk before every write and when it opens a collection, and refuses with
`StorageFullError` while the store is still intact.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from episodex._common.errors import ConfigurationError, StorageFullError
from episodex._engines.plan import Point

__all__ = [
    "DEFAULT_MIN_FREE_BYTES",
    "FreeSpace",
    "estimate_write_bytes",
    "sparse_bytes",
    "used_bytes",
]

#: Free space the embedded store keeps on its disk by default: room for a new write-ahead
#: log segment (32 MiB), the next vector and payload chunks (32 MiB each) and a segment
#: being rewritten, before the disk is full.
DEFAULT_MIN_FREE_BYTES = 128 * 1024 * 1024

# A point is written to the WAL, then to payload and vector storage and the payload indexes:
# about four copies of its serialized size, and whole pages at a time.
_COPIES = 4
_PAGE = 4096


def estimate_write_bytes(points: Sequence[Point]) -> int:
    """An upper estimate of the disk a write of `points` may take."""
    total = 0
    for point in points:
        size = len(json.dumps(point.payload, ensure_ascii=False).encode("utf-8"))
        for vec in point.dense.values():
            size += 4 * len(vec)
        for vec in point.sparse.values():
            size += 8 * len(vec.indices)
        total += size + _PAGE
    return _COPIES * total


def _sizes(folder: Path, *, skip: str | None = None) -> list[tuple[int, int]]:
    sizes: list[tuple[int, int]] = []
    for file in folder.rglob("*"):
        if skip is not None and skip in file.relative_to(folder).parts:
            continue
        try:
            stat = file.lstat()
        except OSError:
            continue  # removed meanwhile
        if file.is_file():
            sizes.append((stat.st_size, stat.st_blocks * 512))
    return sizes


def used_bytes(folder: Path) -> int:
    """Disk the files under `folder` take (a sparse file counts only what it holds)."""
    return sum(used for _, used in _sizes(folder))


def sparse_bytes(folder: Path) -> int:
    """How much the sparse files under `folder` can still grow within their length.

    Loading a collection fills its memory-mapped files to their full length (measured: a
    store of 2,000 episodes took 17 MiB on disk and 90 MiB more when it was opened again),
    so this is what an open may need: an upper bound, as not every file is filled. The
    write-ahead log is left out; it is appended to, never filled at load.
    """
    return sum(max(0, size - used) for size, used in _sizes(folder, skip="wal"))


class FreeSpace:
    """Checks that the disk of `folder` keeps `min_free_bytes` free after a write.

    Args:
        folder: The store folder.
        min_free_bytes: Bytes that must stay free.
    """

    def __init__(self, folder: Path, min_free_bytes: int) -> None:
        given: object = min_free_bytes  # callers may pass anything
        if isinstance(given, bool) or not isinstance(given, int) or given < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"min_free_bytes must be an integer >= 0, got {min_free_bytes!r}"
            )
        self.folder = folder
        self.min_free_bytes = min_free_bytes

    def free(self) -> int:
        """Bytes free for this process on the store's disk."""
        return shutil.disk_usage(self.folder).free

    def fits(self, needed: int) -> bool:
        """Whether `needed` bytes fit with `min_free_bytes` left free."""
        return self.free() - needed >= self.min_free_bytes

    def require(self, needed: int, what: str) -> None:
        """Raise `StorageFullError` unless `needed` bytes fit and `min_free_bytes` stay free."""
        if not self.fits(needed):
            free = self.free()
            raise StorageFullError(
                f"{what} refused: the disk of the store at {self.folder} has {_mib(free)} free, "
                f"and this needs {_mib(needed)} plus the {_mib(self.min_free_bytes)} the store "
                "keeps free; nothing was written and the store is intact. Free space on that "
                "disk (or move the folder to a larger one) and try again"
            )


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"
