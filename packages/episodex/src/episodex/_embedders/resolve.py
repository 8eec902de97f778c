"""Turn what a user passes as `embedder=` into a checked `Embedder`."""

from __future__ import annotations

from episodex._common.errors import ConfigurationError
from episodex._embedders.base import Embedder
from episodex._embedders.bundled import default_embedder
from episodex._embedders.fastembed import FastEmbedEmbedder

__all__ = ["resolve_embedder"]


def resolve_embedder(embedder: Embedder | str | None) -> Embedder:
    """The bundled model for None, a fastembed model for a name, or the embedder given."""
    if embedder is None:
        return default_embedder()
    if isinstance(embedder, str):
        return FastEmbedEmbedder(embedder)
    if not isinstance(embedder, Embedder):  # pyright: ignore[reportUnnecessaryIsInstance]
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
