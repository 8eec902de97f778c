from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import EpisodicMemory


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EpisodicMemory]:
    """One embedded store per test module; tests keep apart by using their own user ids."""
    path: Path = tmp_path_factory.mktemp("episodes")
    mem = EpisodicMemory(path=path)
    yield mem
    mem.close()
