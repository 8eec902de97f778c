"""`path=` takes a folder path, and only that.

`EpisodicMemory` turned any `path` into text with `str()`, so an open memory passed where a
path goes (`SyncEpisodicMemory(memory)` instead of `SyncEpisodicMemory(memory=memory)`), or a
number, named a new folder after its repr in the current directory and opened an empty store
there, silently: the user's episodes were not found and new ones went to the wrong place.
`QdrantTaskStore` raised a bare `TypeError` from `os.fspath`. Both now raise
`ConfigurationError` before anything is opened or made; text and `os.PathLike` still work.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from episodex import ConfigurationError, EpisodicMemory, QdrantTaskStore, SyncEpisodicMemory
from episodex.testing import HashEmbedder


def test_an_object_given_as_path_is_refused_and_makes_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        for wrong in (memory, 5, b"store"):
            with pytest.raises(ConfigurationError, match="path= must be a folder path"):
                SyncEpisodicMemory(wrong, embedder=HashEmbedder(), splade=False)  # type: ignore[arg-type]
            with pytest.raises(ConfigurationError, match="path= must be a folder path"):
                EpisodicMemory(wrong, embedder=HashEmbedder(), splade=False)  # type: ignore[arg-type]
            with pytest.raises(ConfigurationError, match="path= must be a folder path"):
                QdrantTaskStore(wrong, embedder=HashEmbedder())  # type: ignore[arg-type]
        assert os.listdir(tmp_path) == []
    finally:
        memory.close()


def test_text_and_path_objects_still_open_the_folder(tmp_path: Path) -> None:
    for folder in (str(tmp_path / "a"), tmp_path / "b"):
        memory = SyncEpisodicMemory(folder, embedder=HashEmbedder(), splade=False)
        try:
            memory.memorize(
                short_summary="Refund for order 1234",
                long_summary="The user asked for a refund of order 1234.",
                user_id="u1",
                agent_id="support",
                conversation_id="c1",
            )
        finally:
            memory.close()
        again = SyncEpisodicMemory(folder, embedder=HashEmbedder(), splade=False)
        try:
            assert again.count(user_id="u1", agent_id="support") == 1
        finally:
            again.close()
    tasks = QdrantTaskStore(tmp_path / "tasks", embedder=HashEmbedder())
    tasks.close()
    assert (tmp_path / "tasks").is_dir()
