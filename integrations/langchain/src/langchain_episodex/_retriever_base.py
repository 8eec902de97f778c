"""What the two retrievers share: typed errors, per-call `k` and options, sync and async."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from numbers import Integral
from typing import Any, ClassVar

from episodex import (
    ConfigurationError,
    NotSupportedError,
    StoreClosedError,
    ValidationError,
    run_sync,
)
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from langchain_episodex._pydantic import configuration_error
from langchain_episodex._summaries import readable

__all__ = ["EpisodexRetriever"]

logger = logging.getLogger("langchain_episodex")

# Raised for what the caller did (bad input, a closed memory, a call the store does not
# offer), never swallowed as an outage.
_CALLER_ERRORS = (StoreClosedError, ValidationError, ConfigurationError, NotSupportedError)


class EpisodexRetriever(BaseRetriever):
    """A retriever whose `k` and core options may be given per call: `invoke(query, k=2, ...)`.

    Subclasses set `call_options` (the option names a call may pass), and implement
    `_documents` (natively async); the sync path runs the same coroutine.

    A retriever usually feeds a prompt, so when the memory itself fails (its engine cannot be
    reached, a model fails, a stored episode cannot be read back: `EngineError`,
    `EmbeddingError` or any other error) the failure is logged to the `langchain_episodex`
    logger and no documents come back: the chain still reaches the model and the user still
    gets an answer. `raise_on_failure=True` raises instead. Bad input (`ValidationError`,
    `ConfigurationError`, `NotSupportedError`), and a memory already closed, always raise.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    call_options: ClassVar[frozenset[str]] = frozenset()
    k: int
    """How many documents to return (overridden per call by `invoke(..., k=)`)."""
    raise_on_failure: bool = Field(default=False, strict=True)
    """Raise a failure of the memory itself instead of logging it and returning nothing."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise configuration_error(type(self).__name__, exc) from None

    def _defaults(self) -> dict[str, Any]:
        """The options set on the retriever, which a call's own options override."""
        return {}

    def _call_options(
        self, k: int | None, overrides: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        k = self.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(f"k must be an integer >= 1, got {k!r}")
        k = int(k)  # a numpy integer as the Python int it equals
        # `verbose` is LangChain's own invoke flag, passed through to every retriever.
        extra = {name: value for name, value in overrides.items() if name != "verbose"}
        unknown = sorted(set(extra) - self.call_options)
        if unknown:
            raise ValidationError(
                f"unknown retriever argument(s) {', '.join(unknown)}; give k or options "
                f"({', '.join(sorted(self.call_options))})"
            )
        return k, {**self._defaults(), **extra}

    async def _documents(self, query: str, k: int, options: dict[str, Any]) -> list[Document]:
        raise NotImplementedError

    async def _documents_or_none(
        self, query: str, k: int, options: dict[str, Any]
    ) -> list[Document]:
        try:
            return await self._documents(query, k, options)
        except _CALLER_ERRORS:
            raise  # the caller's own mistake, not an outage
        except Exception:
            # Not only the engine's and the embedder's typed errors: a custom embedder's own
            # exception, or an episode stored by another program that cannot be read back,
            # would otherwise fail the chain this retriever feeds, and cost the answer.
            if self.raise_on_failure:
                raise
            logger.warning(
                "%s: memory recall failed; returning no documents so the chain goes on "
                "without memory",
                type(self).__name__,
                exc_info=True,
            )
            return []

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        **overrides: Any,
    ) -> list[Document]:
        query = _readable(query)
        k, options = self._call_options(k, overrides)
        return run_sync(self._documents_or_none(query, k, options))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        **overrides: Any,
    ) -> list[Document]:
        query = _readable(query)
        k, options = self._call_options(k, overrides)
        return await self._documents_or_none(query, k, options)


def _readable(query: object) -> str:
    """The query, with any half character read as U+FFFD.

    A query is end-user text: a client that cuts text by UTF-16 units leaves half an emoji (a
    lone surrogate), which no model can read and the core refuses. Read as the replacement
    character, the rest of the message still recalls, and the chain still gets its documents.
    """
    # A retriever placed where a chain hands it a dict (or None) would fail deep inside with
    # an AttributeError; say what it takes instead.
    if not isinstance(query, str):
        raise ValidationError(
            f"a retriever query must be a string, got {type(query).__name__}: put the "
            "retriever after a step that picks the question out (e.g. itemgetter('question'))"
        )
    return readable(query)
