"""An export to a file opened in another encoding than UTF-8 still imports back, unchanged.

`export` wrote each record with its text as is (`ensure_ascii=False`) into the open file it
was given. A file opened as ASCII (a POSIX locale's default) stopped at the first episode with
a character beyond ASCII with a raw `UnicodeEncodeError`, leaving a cut-off backup; one
opened as Latin-1 or cp1252 (a Windows default) took the export, but in bytes that `import_`,
which reads UTF-8, refused line by line. A file of an ASCII-compatible encoding now gets the
records in ASCII, their other characters as JSON escapes, which every such encoding holds and
`import_` reads back exactly; a file in an encoding that is not ASCII-compatible (UTF-16),
which `import_` could never read, is refused with `ValidationError` before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder

TENANT: dict[str, Any] = {"user_id": "José", "agent_id": "a"}
EPISODES: list[dict[str, Any]] = [
    {**TENANT, "conversation_id": "c1", "short_summary": "plain", "long_summary": "ascii only"},
    {
        **TENANT,
        "conversation_id": "c—2",
        "short_summary": "café ☕ 東京 \u200f RTL \u0000 nul \u2028 sep",
        "long_summary": "naïve 🚀 " * 500,
        "speakers": ["José", "Zoë"],
        "tools_invoked": ["réserver"],
        "metadata": {"note": "ünïcødé", "ключ": ["значение"]},
    },
]


def _fields(item: dict[str, Any] | None) -> dict[str, Any]:
    """Every field of an episode but `created_at`, which each write (an import too) sets."""
    assert item is not None
    return {k: v for k, v in item.items() if k != "created_at"}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    mem = EpisodicMemory(tmp_path / "m", embedder=HashEmbedder(dimension=32), splade=False)
    try:
        mem.store.memorize_many(EPISODES)
        yield mem
    finally:
        mem.close()


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "cp1252", "utf-8", "utf-8-sig"])
async def test_an_export_in_any_ascii_compatible_encoding_imports_back_unchanged(
    memory: EpisodicMemory, tmp_path: Path, encoding: str
) -> None:
    path = tmp_path / "backup.jsonl"
    with path.open("w", encoding=encoding) as fh:
        assert await memory.export(fh, **TENANT) == len(EPISODES)
    other = EpisodicMemory(tmp_path / "o", embedder=HashEmbedder(dimension=32), splade=False)
    try:
        report = await other.import_(path)
        assert sorted(report.imported) == sorted(h.id for h in memory.store.iter_episodes(**TENANT))
        for point_id in report.imported:
            assert _fields(await other.get(point_id, **TENANT)) == _fields(
                await memory.get(point_id, **TENANT)
            )
    finally:
        other.close()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32-le"])
async def test_an_export_to_a_file_import_cannot_read_is_refused_before_writing(
    memory: EpisodicMemory, tmp_path: Path, encoding: str
) -> None:
    path = tmp_path / "backup.jsonl"
    with path.open("w", encoding=encoding) as fh:
        with pytest.raises(ValidationError, match="encoding='utf-8'"):
            await memory.export(fh, **TENANT)
    assert path.read_bytes() == b""
