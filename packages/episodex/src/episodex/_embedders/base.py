"""The dense-embedder protocol every encoder implements, and the input clip they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from episodex._common.errors import ConfigurationError, EmbeddingError

__all__ = [
    "MAX_INPUT_CHARS",
    "Embedder",
    "Matrix",
    "clip_texts",
    "embed_documents",
    "embed_query",
    "require_embedder",
]

if TYPE_CHECKING:
    pass


Matrix = npt.NDArray[np.float32]


# Tokenizing a megabyte only to keep its first 256 pieces wastes seconds, so text is cut to
# this many characters first: far more than 256 word pieces of any real language.
MAX_INPUT_CHARS = 8192


@runtime_checkable
class Embedder(Protocol):
    """What the memory needs from a dense embedding model.

    Vectors are compared by cosine, so their scale does not matter. Implementations must be
    safe to call from several threads.
    """

    @property
    def model_id(self) -> str:
        """A stable id of the model, recorded in every store it writes."""
        ...

    @property
    def dimension(self) -> int:
        """The length of each vector."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts that are stored; returns an array of shape `(len(texts), dimension)`."""
        ...

    def embed_query(self, text: str) -> Matrix:
        """Embed a search query; returns an array of shape `(dimension,)`."""
        ...


def clip_texts(texts: Sequence[str]) -> list[str]:
    return [t[:MAX_INPUT_CHARS] for t in texts]


def _checked(embedder: Embedder, raw: object, shape: tuple[int, ...], what: str) -> Matrix:
    """`raw` if it has `shape` and only numbers float32 can hold, else `EmbeddingError`.

    An embedder is the user's object or a remote API: what it answers is checked before a
    vector reaches an engine, where a NaN or an infinity would be stored (or ranked first)
    without a word, and a missing row would fail as an `IndexError` halfway through a write.
    """
    try:
        array = np.asarray(raw)
        # NaN fails the comparison too; a float64 beyond float32's range would be infinity
        # once the engine stores it in float32.
        with np.errstate(invalid="ignore"):
            finite = np.abs(array.astype(np.float64, copy=False)) <= np.finfo(np.float32).max
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(
            f"the embedder {embedder.model_id!r} returned {what} that is not an array of "
            f"numbers ({exc})"
        ) from None
    if array.shape != shape:
        raise EmbeddingError(
            f"the embedder {embedder.model_id!r} returned {what} of shape {array.shape}, "
            f"expected {shape} (one row per text, {embedder.dimension} numbers each); nothing "
            "was written. Check the embedder and its dimension"
        )
    if not finite.all():
        row = int(np.argwhere(~finite)[0][0]) if array.ndim == 2 else 0
        raise EmbeddingError(
            f"the embedder {embedder.model_id!r} returned a vector that is not finite (NaN, "
            f"infinity or a number beyond float32) for text {row}; nothing was written. "
            "Check the embedding model or service"
        )
    return array  # pyright: ignore[reportUnknownVariableType]


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """The embedder's vectors of `texts`, checked: one finite row of its dimension per text."""
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    raw = embedder.embed_documents(texts)
    return _checked(embedder, raw, (len(texts), embedder.dimension), "document vectors")


def embed_query(embedder: Embedder, text: str) -> Matrix:
    """The embedder's vector of a query, checked: finite, of its dimension."""
    return _checked(embedder, embedder.embed_query(text), (embedder.dimension,), "a query vector")


def require_embedder(embedder: object) -> Embedder:
    """`embedder` if it is an `Embedder` with a positive dimension and a model id.

    Raises:
        ConfigurationError: It is not (a model name where an `Embedder` object is needed, too).
    """
    if isinstance(embedder, str):
        raise ConfigurationError(
            f"embedder must be an Embedder object here, not the model name {embedder!r}: pass "
            "FastEmbedEmbedder(name), or the embedder of the memory whose engine this store uses"
        )
    if not isinstance(embedder, Embedder):
        raise ConfigurationError(
            f"embedder must provide model_id, dimension, embed_documents and embed_query; got "
            f"{type(embedder).__name__}"
        )
    dim = embedder.dimension
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"embedder.dimension must be a positive integer, got {dim!r}")
    if not isinstance(embedder.model_id, str) or not embedder.model_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError("embedder.model_id must be a non-empty string")
    return embedder
