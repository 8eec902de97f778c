"""Read ahead what opening a Qdrant Edge shard reads; give back what recalls do not need.

Before a shard loads, the engine asks the kernel to read its write-ahead log (and, in a
quantized store, its int8 copies) in the background with `posix_fadvise(WILLNEED)`: the load
then finds those pages in the page cache instead of faulting them in one by one from a cold
disk. At 100k episodes a quantized store's cold open went from a median of 1.72 s to 1.36 s
in one run and from 1.45 s to 1.16 s in another (benchmarks/README.md, "Sixth pass"). Like the hand-back below, it changes when pages are read,
never what is read.

Opening a shard reads its whole write-ahead log to replay it: the open segment and the closed
one Qdrant keeps (32 MiB each once full), both memory-mapped. After the replay those pages are
not read again (new entries go at the open segment's end), yet they stay in the process's
resident set: about 40 MiB at 100k episodes. The appendable segment's payload indexes likewise
map whole preallocated pages (5 MiB an index) whether or not they hold anything. On Linux the
engine asks the kernel to reclaim such pages with `madvise(MADV_PAGEOUT)`: the log's in every
store, and in a quantized store (whose point is a small resident set) everything but the int8
copies, so the rest is read as searches and writes touch it. At 100k episodes that took a
quantized store from 0.64x to 0.40x the raw vectors (benchmarks/README.md, "Fifth pass").

Why this is safe: `MADV_PAGEOUT` never changes what memory holds, whatever mapping it lands on.
A file page it reclaims is read back from the file on the next access (a dirty one is written
out first), and an anonymous page goes to swap or stays. `MADV_DONTNEED` is never used: on a
private or anonymous mapping it would discard data. Only shared mappings of files under the
given folder are advised, and the caller holds the engine lock, so the shard is not rotating
its log meanwhile.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["read_ahead", "release_pages"]

_log = logging.getLogger("episodex")

_MADV_PAGEOUT = 21  # Linux 5.4 and later; older kernels answer EINVAL and nothing happens

_Madvise = Callable[[int, int, int], int]


@functools.cache
def _load_madvise() -> _Madvise | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise  # pyright: ignore[reportUnknownVariableType]


def shared_file_mappings(folder: Path, maps: str) -> list[tuple[int, int, str]]:
    """The `(start, end, path)` of shared mappings of files under `folder` in a maps listing."""
    prefix = str(folder.resolve()) + os.sep
    found: list[tuple[int, int, str]] = []
    for line in maps.splitlines():
        # address perms offset device inode path (the path may hold spaces)
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or len(fields[1]) < 4 or fields[1][3] != "s":
            continue
        path = fields[5]
        if not path.startswith(prefix):
            continue
        start, _, end = fields[0].partition("-")
        found.append((int(start, 16), int(end, 16), path))
    return found


def read_ahead(
    folder: Path, *, names: tuple[str, ...] = (), subfolders: tuple[str, ...] = ()
) -> list[Path]:
    """Ask the kernel to start reading files under `folder` into the page cache.

    The files are those named in `names` anywhere under `folder` and every file whose parent
    folder is named in `subfolders`. Returns the files advised (none where `posix_fadvise`
    does not exist). A best effort: a file that cannot be opened is skipped.
    """
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return []
    advised: list[Path] = []
    for parent, _, files in os.walk(folder):
        whole = os.path.basename(parent) in subfolders
        for name in files:
            if not whole and name not in names:
                continue
            path = Path(parent, name)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                advised.append(path)
            except OSError as exc:
                _log.debug("posix_fadvise(WILLNEED) refused for %s: %s", name, exc)
            finally:
                os.close(fd)
    return advised


def release_pages(folder: Path, *, keep: tuple[str, ...] = ()) -> int:
    """Ask the kernel to reclaim this process's pages of shared file mappings under `folder`.

    Files whose name is in `keep` are left alone. Returns the bytes of address space advised
    (0 off Linux, or where the kernel refuses). A best effort: it changes how much memory the
    process holds, never what it reads.
    """
    if not sys.platform.startswith("linux"):
        return 0
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return 0
    madvise = _load_madvise()
    if madvise is None:
        return 0
    advised = 0
    for start, end, path in shared_file_mappings(folder, maps):
        if os.path.basename(path) in keep:
            continue
        if madvise(start, end - start, _MADV_PAGEOUT) == 0:
            advised += end - start
        else:
            _log.debug("madvise(MADV_PAGEOUT) refused for %s: errno %d", path, ctypes.get_errno())
    return advised
