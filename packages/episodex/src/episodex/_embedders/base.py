"""The dense-embedder protocol every encoder implements, and the input clip they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_INPUT_CHARS", "Embedder", "Matrix", "clip_texts"]

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
