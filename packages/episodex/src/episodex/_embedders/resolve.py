"""Turn what a user passes as `embedder=` into a checked `Embedder`."""

from __future__ import annotations

from episodex._embedders.base import Embedder, require_embedder
from episodex._embedders.bundled import default_embedder
from episodex._embedders.fastembed import FastEmbedEmbedder

__all__ = ["resolve_embedder"]


def resolve_embedder(embedder: Embedder | str | None) -> Embedder:
    """The bundled model for None, a fastembed model for a name, or the embedder given."""
    if embedder is None:
        return default_embedder()
    if isinstance(embedder, str):
        return FastEmbedEmbedder(embedder)
    return require_embedder(embedder)
