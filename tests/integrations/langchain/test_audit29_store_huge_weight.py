"""`EpisodexStore` refuses a search weight too large to be a float with `ConfigurationError`.

Its constructor asked `math.isfinite(weight)`, which raises a raw `OverflowError` for an int
such as `10**400` instead of answering.
"""

from __future__ import annotations

import pytest
from episodex import ConfigurationError, EpisodicMemory
from langchain_episodex import EpisodexStore


@pytest.mark.parametrize("name", ["dense_weight", "bm25_weight"])
def test_a_huge_integer_weight_is_a_configuration_error(memory: EpisodicMemory, name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{name} must be a finite number >= 0"):
        EpisodexStore(memory, **{name: 10**400})  # pyright: ignore[reportArgumentType]
