"""The exceptions episodex raises, drawn as one tree.

```
EpisodexError
├── ConfigurationError            (also a ValueError)
│   └── EmbedderMismatchError     the store was made with another embedder or dimension
├── ValidationError               (also a ValueError) bad input; nothing was written
│   ├── ImportFileError           a line of an import file is not a valid record
│   │   └── StoreFileError        a line of a JSONL episode store is not a valid record
│   └── GradingError              a grader's answer could not be read as grades
├── NotFoundError                 (also a KeyError) no such id for this user and agent
│   └── EpisodeNotFoundError      no such task episode
├── UnknownTagError               (also a KeyError) a working-memory tag that is not registered
├── NotSupportedError             (also a NotImplementedError) the store does not offer that call
├── EngineError                   (also a RuntimeError) the vector engine failed
│   ├── StoreLockedError          another process holds the embedded store open
│   ├── StoreClosedError          the memory or store was closed (or its folder deleted)
│   ├── StorageFullError          too little free disk for the embedded store to grow
│   └── EngineUnavailableError    the Qdrant server could not be reached
└── EmbeddingError                (also a RuntimeError) the embedding model failed
```

Every message says what was wrong and what to do about it. Catch `EpisodexError` for all of
them, or the builtin base (`ValueError`, `KeyError`, `RuntimeError`) where code already does.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "EngineError",
    "EngineUnavailableError",
    "EpisodeNotFoundError",
    "EpisodexError",
    "GradingError",
    "ImportFileError",
    "NotFoundError",
    "NotSupportedError",
    "StorageFullError",
    "StoreClosedError",
    "StoreFileError",
    "StoreLockedError",
    "UnknownTagError",
    "ValidationError",
]


class EpisodexError(Exception):
    """Base of every error episodex raises on purpose."""


class ConfigurationError(EpisodexError, ValueError):
    """The memory or store was configured in a way that cannot work."""


class EmbedderMismatchError(ConfigurationError):
    """The store was created with another embedder model or vector dimension."""


class ValidationError(EpisodexError, ValueError):
    """An argument or record is invalid. Nothing was written."""


class ImportFileError(ValidationError):
    """One or more lines of an import file are not valid records.

    Attributes:
        errors: `(line_number, message)` for each bad line, line numbers starting at 1.
    """

    def __init__(self, message: str, errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.errors = errors


class GradingError(ValidationError):
    """A grader's answer could not be read as grades (for example, an LLM answered garbage)."""


class StoreFileError(ImportFileError):
    """Lines of a JSONL episode file are not valid records; the file was left untouched.

    Attributes:
        errors: `(line_number, message)` for each bad line, line numbers starting at 1.
    """


class NotFoundError(EpisodexError, KeyError):
    """No record with that id exists for this user and agent."""

    def __str__(self) -> str:
        # KeyError quotes its argument; a sentence reads better unquoted.
        return str(self.args[0]) if self.args else ""


class EpisodeNotFoundError(NotFoundError):
    """No task episode with that id exists in the store."""


class UnknownTagError(EpisodexError, KeyError):
    """A working-memory tag that was never registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NotSupportedError(EpisodexError, NotImplementedError):
    """The store does not offer this optional call (e.g. `delete` on an append-only store)."""


class EngineError(EpisodexError, RuntimeError):
    """The vector engine (Qdrant Edge or a Qdrant server) failed."""


class StoreLockedError(EngineError):
    """Another process (or another open memory) holds the embedded store folder."""


class StoreClosedError(EngineError):
    """The memory or store was closed, or its folder deleted while open; nothing was written."""


class StorageFullError(EngineError):
    """The embedded store's disk has too little free space to grow safely; nothing was written.

    The store is left intact and opens again once space is freed.
    """


class EngineUnavailableError(EngineError):
    """The Qdrant server could not be reached, even after retrying."""


class EmbeddingError(EpisodexError, RuntimeError):
    """The embedding model failed to load or to embed."""
