"""What a memory shares with another: an open engine and the embedder of its collections."""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["EngineHost"]

E = TypeVar("E", covariant=True)
M = TypeVar("M", covariant=True)


class EngineHost(Protocol[E, M]):
    """Anything holding an open engine and an embedder, such as an `EpisodicMemory`.

    Lessons and task stores take one (`StepLessonMemory.from_memory`, `QdrantTaskStore(memory=)`)
    to keep their collections in the same store, without importing the memory that holds it:
    no memory imports another. Generic so that this layer, below the engines and embedders,
    names neither (`EngineHost[Engine, Embedder]` where it is used).
    """

    @property
    def engine(self) -> E:
        """The open vector engine."""
        ...

    @property
    def embedder(self) -> M:
        """The dense embedder the host's collections were built with."""
        ...
