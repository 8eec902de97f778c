"""A task store given a bad argument raises `ConfigurationError` and holds nothing afterwards.

`QdrantTaskStore` checked `stage1_limit` after opening its embedded engine and raised without
closing it: the folder stayed locked by the failed call for the rest of the process, so every
other process got `StoreLockedError`. A `bm25` that is not a `Bm25Encoder` failed with a raw
`AttributeError` (both stores), and a `Bm25Encoder` with impossible parameters (`k=-1`) was
accepted, then failed with a raw `ValueError` at the first write, or at every opening of a JSONL
file with episodes in it, after the Qdrant store had created its collection with it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    Bm25Encoder,
    ConfigurationError,
    Episode,
    JSONLTaskStore,
    QdrantTaskStore,
    Task,
)
from episodex.testing import HashEmbedder

_OPEN_ELSEWHERE = textwrap.dedent(
    """
    import sys
    from episodex import QdrantTaskStore
    from episodex.testing import HashEmbedder

    store = QdrantTaskStore(sys.argv[1], embedder=HashEmbedder())
    store.close()
    print("opened")
    """
)


@pytest.mark.parametrize("bad", [{"stage1_limit": -1}, {"stage1_limit": "100"}])
def test_a_refused_qdrant_store_leaves_its_folder_free(tmp_path: Path, bad: dict[str, Any]) -> None:
    folder = tmp_path / "tasks"
    with pytest.raises(ConfigurationError, match="stage1_limit"):
        QdrantTaskStore(folder, embedder=HashEmbedder(), **bad)
    other = subprocess.run(
        [sys.executable, "-c", _OPEN_ELSEWHERE, str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert other.returncode == 0, other.stderr[-2000:]
    assert other.stdout.strip() == "opened"


@pytest.mark.parametrize(
    "bm25",
    [
        "english",
        {"k": 1.2},
    ],
)
def test_a_bm25_that_is_not_an_encoder_is_a_configuration_error(tmp_path: Path, bm25: Any) -> None:
    with pytest.raises(ConfigurationError, match="bm25"):
        JSONLTaskStore(tmp_path / "jsonl", bm25=bm25)
    with JSONLTaskStore(tmp_path / "jsonl") as store:  # the failed store holds no lock
        assert store.torn_lines == []
    with pytest.raises(ConfigurationError, match="bm25"):
        QdrantTaskStore(tmp_path / "qdrant", embedder=HashEmbedder(), bm25=bm25)
    QdrantTaskStore(tmp_path / "qdrant", embedder=HashEmbedder()).close()


@pytest.mark.parametrize(
    "params",
    [
        {"k": -1.0},
        {"b": 2.0},
        {"avg_len": 0.0},
        {"k": float("nan")},
        {"k": "1.2"},
        {"b": True},
    ],
)
async def test_bm25_parameters_are_checked_before_any_store_uses_them(
    tmp_path: Path, params: dict[str, Any]
) -> None:
    with JSONLTaskStore(tmp_path) as store:
        await store.write(Episode(task=Task(instruction="convert miles to km")))
    with pytest.raises(ConfigurationError, match="BM25"):
        Bm25Encoder(**params)
    # The store with its episodes still opens and searches with the default parameters.
    with JSONLTaskStore(tmp_path) as store:
        assert len(await store.search("miles")) == 1
