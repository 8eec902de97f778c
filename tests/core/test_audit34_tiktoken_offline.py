"""A tiktoken encoding that has to be downloaded is a clear ConfigurationError offline.

`token_counter("o200k_base")` (or `max_tokens` counted with it) made tiktoken download the
encoding; with no network that failed with the network library's own error, or the socket
guard's, out of whatever call counted tokens. It is now a `ConfigurationError` saying the
encoding downloads on first use and that the bundled one works offline.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import ConfigurationError
from episodex._common import tokens


def test_an_encoding_that_must_be_downloaded_is_a_configuration_error_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # nothing cached: it would download
    # A failed load is not cached, so this is tiktoken's first try in any test run.
    with pytest.raises(ConfigurationError, match="downloads it on first use") as caught:
        tokens.token_counter("o200k_base")
    assert tokens.DEFAULT_ENCODING in str(caught.value)
    # The bundled encoding still counts, offline.
    assert tokens.token_counter()("hello world") == 2


def test_an_unknown_encoding_is_still_named_unknown() -> None:
    with pytest.raises(ConfigurationError, match="unknown tiktoken encoding"):
        tokens.token_counter("no_such_encoding")
