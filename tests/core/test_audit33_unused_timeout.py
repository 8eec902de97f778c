"""A server `timeout` given to a store that has no server is refused, whatever its value.

`timeout=` only applies to a Qdrant server (`url=`). Given with `path=` or `location=":memory:"`
it is refused, so it is never silently ignored; but the check looked at the value's truth, so
`timeout=0` (or `0.0`) went through unnoticed while `timeout=5` was refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConfigurationError, EpisodicMemory, QdrantTaskStore
from episodex.testing import HashEmbedder


@pytest.mark.parametrize("timeout", [0, 0.0, 5])
def test_a_timeout_without_a_server_is_refused(tmp_path: Path, timeout: float) -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        EpisodicMemory(path=str(tmp_path / "s"), embedder=HashEmbedder(), timeout=timeout)
    with pytest.raises(ConfigurationError, match="timeout"):
        EpisodicMemory(location=":memory:", embedder=HashEmbedder(), timeout=timeout)
    with pytest.raises(ConfigurationError, match="timeout"):
        QdrantTaskStore(path=str(tmp_path / "t"), embedder=HashEmbedder(), timeout=timeout)
    # Nothing was made for the refused store.
    assert not (tmp_path / "t").exists()
